// Package predictor estimates how a job performs in a candidate GPU
// partition: its throughput (offline jobs) or latency (online jobs) at a
// given MPS percentage next to given co-runners. It holds the profiling
// dataset format (Sample, ReadSamples), the profiling campaign plan
// (Plan), the features (MMK Table I), a random-forest regressor built on
// plain Go and gonum (golearn's forest is classification-only and its
// regression tree cannot be bagged, so golearn serves only as a test
// oracle), baselines (linear regression, a single tree), model files and
// the STP interface the partitioner uses.
package predictor
