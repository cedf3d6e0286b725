// Package slo is mmk's latency objectives: what an online job declares
// (Target: a percentile of its request latency and a bound, absolute or a
// multiple of its latency alone), how its requests are measured against
// it (Tracker: attainment, the percentile in force, a series over time),
// and the Controller that holds every declared target on a GPU instance
// with the least restraint on the offline jobs beside it.
//
// The package is pure: no IO, no clock. Times are durations on the
// caller's monotonic clock (mmkd's, the kernel scheduler's, the
// simulator's virtual one), passed in.
//
// The controller walks a Ladder of restraints, cheapest first: MPS client
// priority alone (what mmk does by default), holding offline launches
// while a request runs (the guard policy with a fixed block-time
// threshold, down to every offline kernel), restricting offline kernels
// to a part of the GPU's TPCs (off by default), and suspending the offline
// jobs. It climbs one rung when a service misses its target over the
// recent window, and steps down when every service has stayed well within
// its target for a calm spell, waiting twice as long after a step down
// that had to be undone. Every change carries its reason, in numbers.
package slo
