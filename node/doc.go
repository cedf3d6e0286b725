// Package node is mmkd's core loop on one GPU node: it keeps the jobs
// (in the durable store), runs the placement loop (Algorithm 1 with the
// predictor) on every arrival and completion, applies the plan through
// the GPU backend (MIG only when mig.manage is on), the MPS manager and
// one kernel scheduler server per instance, and starts, stops and watches
// job processes through the runner. The web package serves it.
package node
