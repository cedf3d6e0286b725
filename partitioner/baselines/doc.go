// Package baselines holds the published GPU-sharing policies mmk is
// measured against, written from their papers and their authors' code so
// that the job-level simulator compares MMK's Algorithm 1 with them and
// not with weaker copies:
//
//   - MIGER (Zhang et al., ICPP 2024; github.com/Css22/ICPP-MIGER):
//     each online service in the smallest MIG slice meeting its latency
//     target, at most one offline job beside it under MPS when its
//     latency there is at most 0.7 of the target, other offline jobs one
//     per slice, the layout chosen to maximise offline throughput, at
//     most 4 jobs per GPU, the GPU of least load tried first.
//   - MISO (Li et al., SoCC 2022; github.com/boringlee24/socc22-miso):
//     one job per MIG slice, the layout with exactly as many slices as
//     jobs that minimises the jobs' mean slowdown, chosen from the
//     speeds the jobs showed under MPS.
//
// Like partitioner, the package is pure and deterministic: it decides
// from the current placements and the estimator's speeds, and leaves
// time (MIGER's 35 s retries, MISO's 30 s MPS phase) and costs to the
// simulator that drives it. Each rule's comment names where it comes
// from.
package baselines
