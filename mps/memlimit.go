package mps

import "strconv"

// MemLimitEnv is the client variable that limits an MPS client's pinned
// device memory: a comma-separated list of device-ordinal=limit, the
// ordinal as the client sees its devices. A client that asks for more
// than its limit gets CUDA's out-of-memory error; other clients of the
// daemon are not affected.
const MemLimitEnv = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"

// MemLimitValue is MemLimitEnv's value that limits the client's device 0
// (the one device mmk gives each job through CUDA_VISIBLE_DEVICES) to
// mib MiB: "0=2253M".
func MemLimitValue(mib int64) string {
	return "0=" + strconv.FormatInt(mib, 10) + "M"
}
