// Package kernelsched is mmk's kernel scheduler: the pure, deterministic
// core that decides, launch by launch, which of the intercepted kernel
// launches of the jobs sharing one GPU instance may go to the GPU now.
//
// Each job process is a task with a priority 0 (highest) to 9. A task's
// launches wait in priority queues Q0-Q9 and are released by a Policy
// chosen by name (see Policies): fifo and exclusive baselines, FIKIT gap
// filling (fikit), MMK's contention-checked launch (mmk), their
// combination (fikit+mmk), FLEP's hpf and ffs and EffiSha's piv and dprr.
//
// Kernels cannot be interrupted once on the GPU, so every preemptive
// policy here preempts at kernel boundaries: it holds the next launch of
// the task it takes the GPU from, and the kernels already released run to
// completion.
//
// The core does no IO and reads no clock: every call takes the current
// time as a time.Duration since an epoch the caller chooses. The daemon
// (wall clock) and the simulator in package sim (virtual clock) are two
// drivers of the same code.
//
// Predictions come from kernel profiles (Profile): per task and kernel id
// the mean duration SK and the mean idle gap SG after it, as FIKIT
// measures them.
package kernelsched
