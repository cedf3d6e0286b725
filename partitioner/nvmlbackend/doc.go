// Package nvmlbackend implements partitioner.Backend over go-nvml's
// nvml.Interface: the real NVIDIA management library, or the in-memory
// NVML of package fakegpu. Both run the same code, so CI exercises the
// backend that drives real GPUs.
//
// It reads a GPU's MIG geometry from the device rather than trusting the
// built-in tables, creates instances at explicit placements, checks for
// processes before it destroys anything, and turns NVML return codes into
// errors that name the code (NVML_ERROR_IN_USE) and match partitioner's
// sentinel errors. NVML is loaded at run time (dlopen): without a driver,
// Open fails with partitioner.ErrNoDriver and mmk offers the fake backend.
package nvmlbackend
