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
// The controller chooses a rung of a Ladder of restraints, cheapest
// first: MPS client priority alone (what mmk does by default), holding
// offline launches while a request runs, restricting offline kernels to
// a part of the GPU's TPCs, and suspending the offline jobs. It decides
// by forecast, as Kubernetes' autoscaler decides by one formula, a
// tolerance and a window:
//
//   - plant.go measures each service: its service times on each rung
//     (the hook's measure), its arrival rate;
//   - forecast.go forecasts, from a rung's service times, the share of
//     the service's requests late through its queue at its rate and on
//     its own recent arrivals, and the chance that a window of them
//     (Config.Judge) keeps its target;
//   - choose.go picks the cheapest rung forecast to hold every service
//     (a chance of 1-Risk), stays on the rung in force within a tolerance
//     band, and steps down only as far as every choice of the last Calm;
//     a rung not measured beside the jobs of now is forecast from one that
//     was through calibration priors (priors.go), and tried;
//   - feedback.go corrects each service's forecasts by what its requests
//     showed.
//
// Every change of rung carries its reason, in the numbers that decided
// it. sim/slosuite scores the controller on scenarios it was not tuned on
// (`mmkctl sim slo`, docs/slo.md).
package slo
