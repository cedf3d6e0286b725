package nvmlbackend

import (
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

// migDevice is what a MIG device handle tells: its UUID and processes.
type migDevice struct {
	uuid      string
	processes []partitioner.Process
}

// Instances lists the GPU's instances with their compute instances, MIG
// device UUIDs and processes, in placement order; none with MIG disabled.
func (b *Backend) Instances(gpu int) ([]partitioner.GPUInstance, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.instances(gpu)
}

func (b *Backend) instances(gpu int) ([]partitioner.GPUInstance, error) {
	d, err := b.device(gpu)
	if err != nil {
		return nil, err
	}
	mode, err := migMode(d, gpu)
	if err != nil || !mode.Current {
		return nil, err
	}
	m, err := b.model(gpu)
	if err != nil {
		return nil, err
	}
	migs, err := migDevices(d, gpu)
	if err != nil {
		return nil, err
	}
	var out []partitioner.GPUInstance
	for i := range m.Profiles {
		p := &m.Profiles[i]
		info, ret := d.GetGpuInstanceProfileInfo(p.NVMLIndex)
		if err := check(ret, "GPU %d: read profile %s", gpu, p.Name); err != nil {
			return nil, err
		}
		gis, ret := d.GetGpuInstances(&info)
		if err := check(ret, "GPU %d: list %s instances", gpu, p.Name); err != nil {
			return nil, err
		}
		for _, gi := range gis {
			inst, err := readInstance(gpu, p, gi, migs)
			if err != nil {
				return nil, err
			}
			out = append(out, inst)
		}
	}
	slices.SortFunc(out, func(a, b partitioner.GPUInstance) int { return a.Start - b.Start })
	return out, nil
}

func readInstance(gpu int, p *partitioner.Profile, gi nvml.GpuInstance, migs map[[2]int]migDevice) (partitioner.GPUInstance, error) {
	info, ret := gi.GetInfo()
	if err := check(ret, "GPU %d: read a %s instance", gpu, p.Name); err != nil {
		return partitioner.GPUInstance{}, err
	}
	inst := partitioner.GPUInstance{
		ID: int(info.Id), Profile: p.Name, Start: int(info.Placement.Start), Size: int(info.Placement.Size),
		MemoryMiB: p.MemoryMiB, SMs: p.SMs, ComputeSlices: p.ComputeSlices,
	}
	for idx := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		ciInfo, ret := gi.GetComputeInstanceProfileInfo(idx, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if err := check(ret, "GPU %d: read compute profile %d of %s", gpu, idx, inst); err != nil {
			return inst, err
		}
		cis, ret := gi.GetComputeInstances(&ciInfo)
		if err := check(ret, "GPU %d: list compute instances of %s", gpu, inst); err != nil {
			return inst, err
		}
		for _, ci := range cis {
			cinfo, ret := ci.GetInfo()
			if err := check(ret, "GPU %d: read a compute instance of %s", gpu, inst); err != nil {
				return inst, err
			}
			md := migs[[2]int{inst.ID, int(cinfo.Id)}]
			inst.ComputeInstances = append(inst.ComputeInstances, partitioner.ComputeInstance{
				ID: int(cinfo.Id), ComputeSlices: int(ciInfo.SliceCount), UUID: md.uuid, Processes: md.processes,
			})
		}
	}
	slices.SortFunc(inst.ComputeInstances, func(a, b partitioner.ComputeInstance) int { return a.ID - b.ID })
	return inst, nil
}

// migDevices reads every MIG device of a GPU, keyed by GPU and compute
// instance id.
func migDevices(d nvml.Device, gpu int) (map[[2]int]migDevice, error) {
	n, ret := d.GetMaxMigDeviceCount()
	if err := check(ret, "GPU %d: count MIG devices", gpu); err != nil {
		return nil, err
	}
	out := map[[2]int]migDevice{}
	for i := range n {
		md, ret := d.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if err := check(ret, "GPU %d: get MIG device %d", gpu, i); err != nil {
			return nil, err
		}
		gi, ret := md.GetGpuInstanceId()
		if err := check(ret, "GPU %d: MIG device %d: read GPU instance id", gpu, i); err != nil {
			return nil, err
		}
		ci, ret := md.GetComputeInstanceId()
		if err := check(ret, "GPU %d: MIG device %d: read compute instance id", gpu, i); err != nil {
			return nil, err
		}
		uuid, ret := md.GetUUID()
		if err := check(ret, "GPU %d: MIG device %d: read UUID", gpu, i); err != nil {
			return nil, err
		}
		procs, ret := md.GetComputeRunningProcesses()
		if err := check(ret, "GPU %d: MIG device %s: list processes", gpu, uuid); err != nil {
			return nil, err
		}
		dev := migDevice{uuid: uuid}
		for _, p := range procs {
			dev.processes = append(dev.processes, partitioner.Process{PID: int(p.Pid), UsedMemoryMiB: bytesToMiB(p.UsedGpuMemory)})
		}
		out[[2]int{gi, ci}] = dev
	}
	return out, nil
}

// CreateGPUInstance creates a GPU instance of a profile at a placement.
func (b *Backend) CreateGPUInstance(gpu int, profile string, start int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := fmt.Sprintf("GPU %d: create GPU instance %s@%d", gpu, profile, start)
	d, m, err := b.migReady(gpu, op)
	if err != nil {
		return 0, err
	}
	p, err := m.Profile(profile)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", op, partitioner.ErrInvalidArgument, err)
	}
	info, ret := d.GetGpuInstanceProfileInfo(p.NVMLIndex)
	if err := check(ret, "%s: read profile", op); err != nil {
		return 0, err
	}
	gi, ret := d.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(p.MemorySlices)})
	if err := check(ret, "%s", op); err != nil {
		return 0, err
	}
	gInfo, ret := gi.GetInfo()
	if err := check(ret, "%s: read the new instance", op); err != nil {
		return 0, err
	}
	return int(gInfo.Id), nil
}

// migReady returns the device and its geometry, or ErrMIGDisabled.
func (b *Backend) migReady(gpu int, op string) (nvml.Device, *partitioner.Model, error) {
	d, err := b.device(gpu)
	if err != nil {
		return nil, nil, err
	}
	mode, err := migMode(d, gpu)
	if err != nil {
		return nil, nil, err
	}
	if !mode.Current {
		return nil, nil, fmt.Errorf("%s: %w (mmk never changes MIG mode: an operator enables it with nvidia-smi -i %d -mig 1)", op, partitioner.ErrMIGDisabled, gpu)
	}
	m, err := b.model(gpu)
	return d, m, err
}

// CreateComputeInstance creates the compute instance that spans a whole
// GPU instance.
func (b *Backend) CreateComputeInstance(gpu, gpuInstance int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := fmt.Sprintf("GPU %d: create compute instance on GPU instance %d", gpu, gpuInstance)
	d, m, err := b.migReady(gpu, op)
	if err != nil {
		return 0, err
	}
	gi, ret := d.GetGpuInstanceById(gpuInstance)
	if err := check(ret, "%s: find it", op); err != nil {
		return 0, err
	}
	info, ret := gi.GetInfo()
	if err := check(ret, "%s: read it", op); err != nil {
		return 0, err
	}
	slicesOf := 0
	for _, p := range m.Profiles {
		if uint32(p.ID) == info.ProfileId {
			slicesOf = p.ComputeSlices
		}
	}
	for idx := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		ciInfo, ret := gi.GetComputeInstanceProfileInfo(idx, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || int(ciInfo.SliceCount) != slicesOf {
			continue
		}
		ci, ret := gi.CreateComputeInstance(&ciInfo)
		if err := check(ret, "%s", op); err != nil {
			return 0, err
		}
		cInfo, ret := ci.GetInfo()
		if err := check(ret, "%s: read the new instance", op); err != nil {
			return 0, err
		}
		return int(cInfo.Id), nil
	}
	return 0, fmt.Errorf("%s: %w: no compute instance profile spans its %d compute slices", op, partitioner.ErrNotSupported, slicesOf)
}

// DestroyComputeInstance destroys a compute instance after checking that
// no process runs on it.
func (b *Backend) DestroyComputeInstance(gpu, gpuInstance, computeInstance int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := fmt.Sprintf("GPU %d: destroy compute instance %d of GPU instance %d", gpu, computeInstance, gpuInstance)
	d, _, err := b.migReady(gpu, op)
	if err != nil {
		return err
	}
	if err := b.refuseBusy(gpu, op, gpuInstance, computeInstance); err != nil {
		return err
	}
	gi, ret := d.GetGpuInstanceById(gpuInstance)
	if err := check(ret, "%s: find GPU instance", op); err != nil {
		return err
	}
	ci, ret := gi.GetComputeInstanceById(computeInstance)
	if err := check(ret, "%s: find it", op); err != nil {
		return err
	}
	return check(ci.Destroy(), "%s", op)
}

// DestroyGPUInstance destroys a GPU instance after checking that no process
// runs on it; its compute instances must be destroyed first.
func (b *Backend) DestroyGPUInstance(gpu, gpuInstance int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := fmt.Sprintf("GPU %d: destroy GPU instance %d", gpu, gpuInstance)
	d, _, err := b.migReady(gpu, op)
	if err != nil {
		return err
	}
	if err := b.refuseBusy(gpu, op, gpuInstance, -1); err != nil {
		return err
	}
	gi, ret := d.GetGpuInstanceById(gpuInstance)
	if err := check(ret, "%s: find it", op); err != nil {
		return err
	}
	if ret := gi.Destroy(); ret == nvml.ERROR_IN_USE {
		return fmt.Errorf("%w: destroy its compute instances first", check(ret, "%s", op))
	} else if err := check(ret, "%s", op); err != nil {
		return err
	}
	return nil
}

// refuseBusy fails with a BusyError when processes run on the GPU instance
// (computeInstance < 0) or on one of its compute instances.
func (b *Backend) refuseBusy(gpu int, op string, gpuInstance, computeInstance int) error {
	insts, err := b.instances(gpu)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	for _, gi := range insts {
		if gi.ID != gpuInstance {
			continue
		}
		var procs []partitioner.Process
		for _, ci := range gi.ComputeInstances {
			if computeInstance < 0 || ci.ID == computeInstance {
				procs = append(procs, ci.Processes...)
			}
		}
		if len(procs) > 0 {
			return fmt.Errorf("%s: %w", op, &partitioner.BusyError{Instance: gi.String(), Processes: procs})
		}
	}
	return nil
}
