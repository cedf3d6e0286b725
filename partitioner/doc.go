// Package partitioner holds mmk's model of MIG hardware partitions and the
// decisions made on it.
//
// This first layer is pure and deterministic: the geometry of each supported
// GPU model (profiles, their slices and allowed placements), the enumeration
// of every valid layout, a canonical text form for layouts with its parser,
// and the reconfiguration planner that turns the instances a GPU has now into
// the ordered steps that reach a target layout. It performs no IO.
//
// GPU access sits behind the small [Backend] interface. Two implementations
// exist, both in subpackages: nvmlbackend drives a real GPU through go-nvml,
// and fakegpu is an in-memory NVML that enforces what the hardware enforces,
// so that the same backend code runs in CI without a GPU.
//
// # Geometry
//
// A GPU of a MIG-capable model has 7 compute slices and 8 memory slices. A
// GPU instance of a profile occupies a contiguous run of memory slices that
// starts at one of the profile's allowed placements, and a number of compute
// slices. Instances may not share a memory slice, at most 7 compute slices
// are in use, and each profile has a maximum instance count. Placements are
// counted in memory slices, as NVML's nvmlGpuInstancePlacement_t does.
//
// # Algorithm 1 (hybrid MIG + MPS partitioning)
//
// [Decide] is MMK's Algorithm 1 with MPSConfig, as a pure function of the
// current placements, the waiting jobs and an [Estimator] (MMK's stp).
// Where the paper is silent, mmk chooses as follows.
//
//   - Speeds add up. The estimator returns each job's speed relative to
//     the job alone on the whole GPU (throughput ratio offline, inverse
//     latency ratio online), so that online and offline jobs can be summed
//     into one system throughput.
//   - Greedy placement. Jobs are taken largest memory first. Each goes to
//     the instance, on any GPU, where it raises the predicted total most,
//     among those with the memory left and an SM share left for it. A job
//     no instance can take waits, and waiting jobs keep their arrival
//     order.
//   - MPSConfig. A job's demand is the smallest percentage (10, 20, ...)
//     at which it reaches 95 % of its speed at 100 %. Jobs are ordered
//     online first, then by speed per share at their demand. Each gets its
//     demand while the instance's 100 % lasts. What is left goes, 10 % at
//     a time, to the job whose speed it raises most. Running online jobs
//     keep their percentage and get no leftovers. Percentages never sum
//     above 100.
//   - Re-sharing costs a restart. MPS fixes a client's percentage when its
//     context starts, so changing a running job's percentage restarts it.
//     An instance is re-shared after jobs leave only when that raises its
//     predicted total by Options.MinGain (default 5 %).
//   - MIG. Only on a GPU where no online job runs does the search try
//     every maximal layout of the model. A layout is maximal when no
//     instance can be added. A non-maximal layout leaves slices idle that
//     a maximal one containing it could use. Layouts with the same profiles
//     at other placements predict the same speeds, so one per multiset of
//     profiles is tried, and the GPU's current layout stands for its own
//     (no needless MIG change). A layout is also skipped when another with
//     as many instances gives each of its instances one at least as large
//     in SMs and memory, by the same reasoning: speed does not fall with
//     SMs. This leaves 11 of the 78 maximal A100-80GB layouts, among them
//     both of MMK observation 1. Each candidate gets the same
//     greedy placement of the GPU's jobs plus the waiting ones, and must
//     keep a place for every job already on the GPU. It is adopted when
//     its predicted total beats the current one by MinGain.
//   - Pinned jobs. A job with a [Pin] (a Kubernetes claim whose device the
//     cluster's scheduler chose) is tried only in its instance and waits
//     if it does not fit there; once placed it keeps its percentage, and
//     the layout of a GPU it runs on or waits for is never searched:
//     mmk does not run its process, so it can never restart it.
//   - Output. The [Plan] gives every GPU's layout and placements, the
//     jobs still waiting, and per GPU the [Reconfiguration] from
//     [PlanReconfiguration], the jobs to restart (instance destroyed or
//     changed, or percentage changed) and the jobs to start.
//
// # Options that depart from the paper
//
// Each is a named option, so that the simulator's ablation shows what it
// is worth (docs/results/partition.md):
//
//   - FullDemand: MPSConfig as the paper writes it (lines 28-32): a job
//     gets its whole demand or does not go into the instance. Without
//     it, a job takes what is left down to 10 %, and an online job
//     admitted so keeps that sliver for life.
//   - OnlineReclaim: a running online job below its demand takes it back
//     when its instance is shared anew (a restart).
//   - MIGKeepOnline: MIG changes on a GPU where online jobs run, to a
//     layout that keeps each online job's instance and share.
//   - OnlineFirst: pending online jobs are placed before offline ones.
//   - ArrivalOrder: pending jobs are placed first come, first served
//     (each where it fits, later ones filling in) instead of largest
//     memory first, which keeps a small job waiting behind every large
//     one that arrives after it (mmkd's default and mmk's in the
//     simulator).
//   - PriorityShares: every new job at 100 %, shares summing above 100 %
//     where MPS client priority protects online jobs (mmkd's default
//     where MPS runs).
//   - Spread: each job into the instance holding the fewest jobs, the
//     predicted gain breaking ties (docs/results/partition.md: with
//     priority it lowers mmk's JCT and raises its SLO attainment).
//
// Options also express the unrestricted variants the simulator compares
// against: with MIGUnderOnline and without FixOnlinePercent, Algorithm 1
// has neither of MMK's protections (alg1-unprotected);
// MaxJobsPerInstance 1 with ArrivalOrder gives MIG only, first come,
// first served (miso-greedy). The published baselines themselves, MIGER
// and MISO as their papers and code describe them, are in package
// partitioner/baselines.
package partitioner
