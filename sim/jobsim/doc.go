// Package jobsim simulates jobs arriving at a node's GPUs, placed by the
// real partitioner (Algorithm 1 with its named options) or by the
// published baselines (partitioner/baselines: MIGER, MISO), running at
// speeds from a ground-truth model built from measured samples
// (SpeedModel: MPS shares, oversubscription, busy shares, MPS client
// priority, memory interference), with the kernel scheduler's effect
// measured in package sim (KernelEffects).
//
// Offline jobs are batches of work; online jobs are services: requests
// arrive at a load from the time a service is first up, each served at
// the service's speed within a latency target (SLO). Moving a job costs
// what it costs on a GPU: its start-up, a checkpoint's save and restore
// (RestartCosts, measured per job type), the requests a service holds,
// and the time of a MIG change.
//
// Simulate reports per policy (ParsePolicy) JCTs, makespan, system
// throughput, SLO attainment and the 99th percentile of latency over
// target, restarts and MIG changes. The daemon never imports it.
package jobsim
