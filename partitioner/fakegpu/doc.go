// Package fakegpu is an in-memory NVML: an implementation of go-nvml's
// nvml.Interface that behaves like the GPUs of mmk's built-in models, so
// that the NVML backend, and everything above it, runs unchanged in CI and
// on machines without a GPU.
//
// The fake enforces what the hardware and driver enforce, and answers with
// the NVML return codes they use: GPU instances only while MIG mode is
// enabled (ERROR_NOT_SUPPORTED otherwise), only at a profile's allowed
// placements (ERROR_INVALID_ARGUMENT), never on a memory slice another
// instance holds, beyond a profile's count, or past the 7 compute slices
// (ERROR_INSUFFICIENT_RESOURCES); compute instances within their GPU
// instance's slices; no GPU instance destroyed while it has compute
// instances, and no compute instance while processes run on it
// (ERROR_IN_USE); no call before Init (ERROR_UNINITIALIZED). Each compute
// instance is a MIG device with its own UUID, memory and SMs. Processes are
// attached to a GPU or MIG device with AttachProcess, as CUDA clients would;
// SetProcessMemory and SetProcessUtilization change what NVML reports of
// them (memory per process, and utilisation samples of busy processes,
// which NVML gives only without MIG: ERROR_NOT_SUPPORTED with it,
// ERROR_NOT_FOUND when no process was busy since the caller's last sample).
// Health queries answer as a GPU of the product would (health.go): GPU
// utilisation from the busy processes (ERROR_NOT_SUPPORTED with MIG),
// power and temperature rising with that load and moving with the
// fake's clock (SetClock), ECC counters that AddECCErrors raises and a
// reset clears (the volatile ones), and XID events that InjectXID
// delivers to the event sets registered for them.
//
// Its rules are written independently of partitioner's layout checks, so
// that tests of the planner against the fake check one against the other.
//
// go-nvml's own mocks (pkg/nvml/mock/dgx*) are not used as they are: their
// H100/H200 SM counts and placements are wrong and they have no MIG device
// handles. The fake embeds the generated mock types only so that a method
// it does not implement fails loudly, naming the method.
package fakegpu
