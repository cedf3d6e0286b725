package partitioner

// GPUHealth is one GPU's health as NVML reads it: how busy it is, its
// power draw and temperature, and its error counts. Every reading is
// read-only and may be unknown (nil), where NVML cannot give it (not
// supported on this GPU or in its mode, no permission, a driver
// error); Unknown then says why. A GPU whose readings are all unknown is
// still listed: health fails open, field by field.
type GPUHealth struct {
	// GPU is the GPU's index and UUID its UUID.
	GPU  int    `json:"gpu"`
	UUID string `json:"uuid"`
	// UtilPct is the percent of the last sample period (NVML's, about a
	// second) during which a kernel ran on the GPU; MemUtilPct that
	// during which its memory was read or written. NVML gives neither
	// with MIG enabled.
	UtilPct    *int `json:"utilPct"`
	MemUtilPct *int `json:"memUtilPct"`
	// PowerW is the board's power draw in watts; PowerLimitW the limit
	// the driver enforces.
	PowerW      *float64 `json:"powerW"`
	PowerLimitW *float64 `json:"powerLimitW"`
	// TempC is the GPU die's temperature in degrees Celsius.
	TempC *int `json:"tempC"`
	// ECCUncorrected counts the uncorrectable (double-bit) ECC errors of
	// the GPU's memory since the driver last loaded (NVML's volatile
	// counter).
	ECCUncorrected *uint64 `json:"eccUncorrected"`
	// XIDs counts the XID critical errors the driver reported for the
	// GPU since the reader began to watch (when mmkd started); LastXID is
	// the code of the latest (0: none).
	XIDs    *uint64 `json:"xids"`
	LastXID uint64  `json:"lastXid,omitempty"`
	// Unknown names each reading left unknown (by its JSON name) with
	// NVML's reason.
	Unknown map[string]string `json:"unknown,omitempty"`
}

// HealthReader is a backend that reads its GPUs' health (the NVML
// backend, over the real library or the fake).
type HealthReader interface {
	// Health reads every GPU's health now. It fails only where the GPUs
	// cannot be listed; a reading NVML cannot give is unknown.
	Health() ([]GPUHealth, error)
}
