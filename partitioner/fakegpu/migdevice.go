package fakegpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// migDevice is the NVML handle of a MIG device: one compute instance of
// one GPU instance, which CUDA sees as a GPU of its own.
type migDevice struct {
	mock.Device // unimplemented methods panic, naming themselves
	ci          *computeInstance
}

var _ nvml.Device = (*migDevice)(nil)

func (m *migDevice) lock() (func(), nvml.Return) {
	return m.ci.parent.gpu.enter(func() bool { return m.ci.destroyed })
}

// IsMigDeviceHandle reports true.
func (m *migDevice) IsMigDeviceHandle() (bool, nvml.Return) { return true, nvml.SUCCESS }

// GetUUID returns the MIG device UUID ("MIG-...").
func (m *migDevice) GetUUID() (string, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.uuid, ret
}

// GetName returns the product name with the profile, as the driver does.
func (m *migDevice) GetName() (string, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.parent.gpu.product.name + " MIG " + m.ci.parent.profile.Name, ret
}

// GetGpuInstanceId returns the id of the device's GPU instance.
func (m *migDevice) GetGpuInstanceId() (int, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.parent.id, ret
}

// GetComputeInstanceId returns the id of the device's compute instance.
func (m *migDevice) GetComputeInstanceId() (int, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.id, ret
}

// GetDeviceHandleFromMigDeviceHandle returns the parent GPU.
func (m *migDevice) GetDeviceHandleFromMigDeviceHandle() (nvml.Device, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.parent.gpu.handle, ret
}

// GetMemoryInfo returns the GPU instance's memory and what the device's
// processes use of it.
func (m *migDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	total := uint64(m.ci.parent.profile.MemoryMiB) << 20
	used := uint64(m.ci.parent.gpu.usedMiB(m.ci)) << 20
	return nvml.Memory{Total: total, Used: used, Free: total - used}, ret
}

// GetAttributes returns the MIG device's SMs, slices and memory.
func (m *migDevice) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	p := m.ci.parent.profile
	return nvml.DeviceAttributes{
		MultiprocessorCount:       uint32(p.SMs * m.ci.slices / p.ComputeSlices),
		GpuInstanceSliceCount:     uint32(p.ComputeSlices),
		ComputeInstanceSliceCount: uint32(m.ci.slices),
		MemorySizeMB:              uint64(p.MemoryMiB),
	}, ret
}

// GetComputeRunningProcesses lists the processes on this MIG device.
func (m *migDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	unlock, ret := m.lock()
	defer unlock()
	return m.ci.parent.gpu.processInfos(func(p process) bool { return p.ci == m.ci }), ret
}
