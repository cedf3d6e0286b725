package fakegpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/mmkgpu/mmk/partitioner"
)

// device is the NVML handle of a whole fake GPU.
type device struct {
	mock.Device // unimplemented methods panic, naming themselves
	gpu         *gpu
}

var _ nvml.Device = (*device)(nil)

// lock takes the fake's lock and reports whether the library is initialised.
func (d *device) lock() (unlock func(), ret nvml.Return) { return d.gpu.enter(nil) }

// migLock is lock for calls that need MIG mode enabled: they answer
// ERROR_NOT_SUPPORTED otherwise.
func (d *device) migLock() (unlock func(), ret nvml.Return) {
	unlock, ret = d.lock()
	if ret == nvml.SUCCESS && !d.gpu.migCurrent {
		ret = nvml.ERROR_NOT_SUPPORTED
	}
	return unlock, ret
}

// GetIndex returns the GPU's index.
func (d *device) GetIndex() (int, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.index, ret
}

// GetUUID returns the GPU's UUID.
func (d *device) GetUUID() (string, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.uuid, ret
}

// GetName returns the product name.
func (d *device) GetName() (string, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.product.name, ret
}

// GetMemoryInfo returns total, used and free memory in bytes.
func (d *device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	total := uint64(d.gpu.model.MemoryMiB) << 20
	used := uint64(d.gpu.usedMiB(nil)) << 20
	return nvml.Memory{Total: total, Used: used, Free: total - used}, ret
}

// GetMigMode returns the current and pending MIG mode.
func (d *device) GetMigMode() (int, int, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return mode(d.gpu.migCurrent), mode(d.gpu.migNext), ret
}

func mode(enabled bool) int {
	if enabled {
		return nvml.DEVICE_MIG_ENABLE
	}
	return nvml.DEVICE_MIG_DISABLE
}

// GetNumGpuCores returns the number of CUDA cores.
func (d *device) GetNumGpuCores() (int, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.model.SMs * d.gpu.product.coresPerSM, ret
}

// GetCudaComputeCapability returns the compute capability.
func (d *device) GetCudaComputeCapability() (int, int, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.product.major, d.gpu.product.minor, ret
}

// GetAttributes is only supported on MIG devices, as on hardware.
func (d *device) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
}

// IsMigDeviceHandle reports false: this is a whole GPU.
func (d *device) IsMigDeviceHandle() (bool, nvml.Return) { return false, nvml.SUCCESS }

// GetComputeRunningProcesses lists every process on the GPU, with its GPU
// and compute instance ids when MIG is enabled.
func (d *device) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.processInfos(func(process) bool { return true }), ret
}

// GpuInstanceProfileName names a profile as the versioned
// nvmlDeviceGetGpuInstanceProfileInfoV does ("MIG 3g.40gb"); go-nvml sends
// that call straight to the C library, so the NVML backend asks devices
// that implement this method instead.
func (d *device) GpuInstanceProfileName(index int) (string, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return "", ret
	}
	p, ret := d.gpu.profileByIndex(index)
	if ret != nvml.SUCCESS {
		return "", ret
	}
	return "MIG " + p.Name, nvml.SUCCESS
}

func (g *gpu) profileByIndex(index int) (*partitioner.Profile, nvml.Return) {
	if index < 0 || index >= nvml.GPU_INSTANCE_PROFILE_COUNT {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	for i := range g.model.Profiles {
		if g.model.Profiles[i].NVMLIndex == index {
			return &g.model.Profiles[i], nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_SUPPORTED
}

func (g *gpu) profileByID(id uint32) *partitioner.Profile {
	for i := range g.model.Profiles {
		if uint32(g.model.Profiles[i].ID) == id {
			return &g.model.Profiles[i]
		}
	}
	return nil
}

// GetGpuInstanceProfileInfo describes a profile; it answers with MIG
// disabled too, as nvidia-smi mig -lgip does.
func (d *device) GetGpuInstanceProfileInfo(index int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nvml.GpuInstanceProfileInfo{}, ret
	}
	p, ret := d.gpu.profileByIndex(index)
	if ret != nvml.SUCCESS {
		return nvml.GpuInstanceProfileInfo{}, ret
	}
	return nvml.GpuInstanceProfileInfo{
		Id: uint32(p.ID), SliceCount: uint32(p.ComputeSlices), InstanceCount: uint32(p.MaxCount),
		MultiprocessorCount: uint32(p.SMs), MemorySizeMB: uint64(p.MemoryMiB),
		CopyEngineCount: uint32(p.ComputeSlices),
	}, nvml.SUCCESS
}

// GetGpuInstancePossiblePlacements lists every placement of a profile,
// free or not, with MIG enabled or not.
func (d *device) GetGpuInstancePossiblePlacements(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	p := d.gpu.profileByID(info.Id)
	if p == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	out := make([]nvml.GpuInstancePlacement, len(p.Placements))
	for i, s := range p.Placements {
		out[i] = nvml.GpuInstancePlacement{Start: uint32(s), Size: uint32(p.MemorySlices)}
	}
	return out, nvml.SUCCESS
}

// CreateGpuInstanceWithPlacement creates a GPU instance, enforcing the
// hardware's rules.
func (d *device) CreateGpuInstanceWithPlacement(info *nvml.GpuInstanceProfileInfo, pl *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil || pl == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	gi, ret := d.gpu.createInstance(info.Id, int(pl.Start), int(pl.Size))
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return gi.handle, nvml.SUCCESS
}

// GetGpuInstances lists the GPU instances of a profile.
func (d *device) GetGpuInstances(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstance, nvml.Return) {
	unlock, ret := d.migLock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil || d.gpu.profileByID(info.Id) == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	var out []nvml.GpuInstance
	for _, gi := range d.gpu.instances {
		if uint32(gi.profile.ID) == info.Id {
			out = append(out, gi.handle)
		}
	}
	return out, nvml.SUCCESS
}

// GetGpuInstanceById returns the GPU instance with an id.
func (d *device) GetGpuInstanceById(id int) (nvml.GpuInstance, nvml.Return) {
	unlock, ret := d.migLock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	for _, gi := range d.gpu.instances {
		if gi.id == id {
			return gi.handle, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// GetMaxMigDeviceCount returns how many MIG devices the GPU can hold: 0
// with MIG disabled, as on hardware.
func (d *device) GetMaxMigDeviceCount() (int, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if !d.gpu.migCurrent {
		return 0, ret
	}
	return partitioner.ComputeSlices, ret
}

// GetMigDeviceHandleByIndex returns the i-th MIG device, ordered by GPU
// and compute instance id, or ERROR_NOT_FOUND past the last.
func (d *device) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if !d.gpu.migCurrent || i < 0 || i >= partitioner.ComputeSlices {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	n := 0
	for _, gi := range d.gpu.instances {
		for _, ci := range gi.computes {
			if n == i {
				return ci.mig, nvml.SUCCESS
			}
			n++
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}
