// Package partitioner holds mmk's model of MIG hardware partitions and the
// decisions made on it.
//
// This first layer is pure and deterministic: the geometry of each supported
// GPU model (profiles, their slices and allowed placements), the enumeration
// of every valid layout, a canonical text form for layouts with its parser,
// and the reconfiguration planner that turns the instances a GPU has now into
// the ordered steps that reach a target layout. It performs no IO.
//
// GPU access sits behind the small [Backend] interface. Two implementations
// exist, both in subpackages: nvmlbackend drives a real GPU through go-nvml,
// and fakegpu is an in-memory NVML that enforces what the hardware enforces,
// so that the same backend code runs in CI without a GPU.
//
// # Geometry
//
// A GPU of a MIG-capable model has 7 compute slices and 8 memory slices. A
// GPU instance of a profile occupies a contiguous run of memory slices that
// starts at one of the profile's allowed placements, and a number of compute
// slices. Instances may not share a memory slice, at most 7 compute slices
// are in use, and each profile has a maximum instance count. Placements are
// counted in memory slices, as NVML's nvmlGpuInstancePlacement_t does.
package partitioner
