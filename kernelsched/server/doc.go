// Package server is the kernel scheduler's IO adapter: one server per GPU
// instance receives the launches that the hook (hook/lib, injected into
// each job) reports, runs the kernelsched core's policy on them unchanged,
// and grants the held ones.
//
// The transport is shared memory (hook/lib/proto.h, protocol version 2):
// each task gets a memfd with a ring of launch records and a grant word,
// passed to the hook over a Unix socket with SCM_RIGHTS. A launch of a
// task the policy releases at once (Scheduler.ReleasesAtOnce) costs the
// hook a ring write and no system call; a held launch waits on a futex
// for its grant, at most the hook's timeout (fail-open). The server reads
// the rings in one loop that spins briefly after activity and otherwise
// sleeps on an eventfd the hooks write when they need it awake.
//
// Kernel completions are not observed one by one in the sharing phase
// (that would cost an event per launch): a released kernel is taken to
// finish its profiled duration SK after the later of its release and the
// predicted end of the task's previous kernel, as FIKIT predicts gaps.
// What is observed are a task's synchronisations: their return completes
// every kernel the task released and ends its run, which is how guard
// measures an online job's requests (kernelsched.Scheduler.Synced).
//
// The policy can be switched while tasks run (SetPolicy, and the control
// lines of Do), and a task's free flag follows the policy's AtOnce at
// every decision.
package server
