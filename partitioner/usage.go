package partitioner

// DeviceUsage is one CUDA device (a GPU without MIG, or a MIG device)
// with the compute processes NVML lists on it.
type DeviceUsage struct {
	// GPU is the GPU's index and GPUUUID its UUID.
	GPU     int    `json:"gpu"`
	GPUUUID string `json:"gpuUUID"`
	// Device is the device's UUID: the GPU's, or its MIG device's.
	Device string `json:"device"`
	// GPUInstance is the MIG GPU instance's id and Profile its profile;
	// -1 and "" on a GPU without MIG.
	GPUInstance int    `json:"gpuInstance"`
	Profile     string `json:"profile,omitempty"`
	// Util says whether NVML gave the processes' utilisation (it gives
	// none with MIG enabled).
	Util      bool           `json:"util"`
	Processes []ProcessUsage `json:"processes"`
}

// ProcessUsage is one compute process's use of its device.
type ProcessUsage struct {
	PID int `json:"pid"`
	// UsedMemoryMiB is the device memory the process holds.
	UsedMemoryMiB int64 `json:"usedMemoryMiB"`
	// SMUtil and MemUtil are the percent of the last sample period the
	// process's kernels ran and its memory was read or written (0 when
	// the device has no utilisation, see DeviceUsage.Util).
	SMUtil  int `json:"smUtil"`
	MemUtil int `json:"memUtil"`
}

// UsageReader is a backend that reads its devices' compute processes
// with their memory and utilisation (the NVML backend).
type UsageReader interface {
	// Usage lists every CUDA device of every GPU with its processes.
	// Utilisation covers the time since the last call.
	Usage() ([]DeviceUsage, error)
}
