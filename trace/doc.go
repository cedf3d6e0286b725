// Package trace loads kernel traces and replays them through mmk's kernel
// scheduler in a discrete-event simulation of one GPU instance.
//
// A kernel trace (the format of the traces in data/, recorded on an H200
// under the PyTorch profiler) is one process running iterations of one
// workload: per kernel its name, launch geometry, registers, shared
// memory, GPU start and duration, and the host time of its launch call.
//
// The simulator (Simulate) runs N tasks, each replaying its trace as
// repeated requests, on a simulated GPU, and asks a real
// kernelsched.Scheduler what to launch: the simulator has no copy of any
// policy. See Simulate for the model of host, hook and GPU.
package trace
