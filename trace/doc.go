// Package trace holds mmk's data formats and the profiling phase, which
// the daemon, the hook's tooling and the simulators share:
//
//   - kernel traces (ReadKernelTrace, LoadKernelTrace, the built-in H200
//     traces in data/): one process running iterations of one workload,
//     per kernel its name, launch geometry, registers, shared memory, GPU
//     start and duration, and the host time of its launch call; and the
//     kernel profiles made of them (KernelTrace.Profile, HookProfile);
//   - job traces (SimJob: SyntheticJobs at a stated load, the pod lists of
//     the Alibaba openb trace in every variant, ReadOpenBPods, and the
//     work model that replays them, OpenBJobs; LoadWorkload) and the job
//     types they name (JobType, JobTypes);
//   - the profiling phase (ProfilePhase): the hook's trace of a job's first
//     runs turned into the task's profile for the kernel scheduler.
//
// The simulators that replay these live in package sim.
package trace
