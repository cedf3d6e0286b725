// Package jobsim simulates jobs arriving at a node's GPUs, placed by the
// real partitioner (Algorithm 1 and its baselines), running at speeds from
// a ground-truth model built from measured samples (SpeedModel), with the
// kernel scheduler's effect measured in package sim (KernelEffects). It
// reports JCTs, makespan and system throughput per policy (Experiment).
// The daemon never imports it.
package jobsim
