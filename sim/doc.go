// Package sim replays kernel traces (package trace) through mmk's kernel
// scheduler in a discrete-event simulation of one GPU instance; its
// subpackage jobsim simulates whole jobs on a node's GPUs through the
// partitioner. They are tools for experiments: the daemon (mmkd, node,
// web) never imports them, which a test of cmd/mmkd checks.
//
// The simulator (Simulate) runs N tasks, each replaying its trace as
// repeated requests, on a simulated GPU, and asks a real
// kernelsched.Scheduler what to launch: the simulator has no copy of any
// policy. See Simulate for the model of host, hook and GPU.
package sim
