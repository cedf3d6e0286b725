package nvmlbackend

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

var _ partitioner.UsageReader = (*Backend)(nil)

// Usage lists every CUDA device of every GPU with its compute processes
// and the memory each holds. On a GPU without MIG it adds each process's
// SM and memory utilisation since the last call
// (nvmlDeviceGetProcessUtilization; NVML reports only the processes that
// were busy, so a process it leaves out was idle). With MIG the devices
// are the MIG devices, with their GPU instance and profile, and without
// utilisation, which NVML does not give there.
func (b *Backend) Usage() ([]partitioner.DeviceUsage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ret := b.lib.DeviceGetCount()
	if err := check(ret, "count GPUs"); err != nil {
		return nil, err
	}
	var out []partitioner.DeviceUsage
	for i := range n {
		d, err := b.device(i)
		if err != nil {
			return nil, err
		}
		uuid, ret := d.GetUUID()
		if err := check(ret, "GPU %d: read UUID", i); err != nil {
			return nil, err
		}
		mode, err := migMode(d, i)
		if err != nil {
			return nil, err
		}
		if mode.Current {
			insts, err := b.instances(i)
			if err != nil {
				return nil, err
			}
			for _, gi := range insts {
				for _, ci := range gi.ComputeInstances {
					du := partitioner.DeviceUsage{GPU: i, GPUUUID: uuid, Device: ci.UUID, GPUInstance: gi.ID, Profile: gi.Profile,
						Processes: []partitioner.ProcessUsage{}}
					for _, p := range ci.Processes {
						du.Processes = append(du.Processes, partitioner.ProcessUsage{PID: p.PID, UsedMemoryMiB: p.UsedMemoryMiB})
					}
					out = append(out, du)
				}
			}
			continue
		}
		procs, ret := d.GetComputeRunningProcesses()
		if err := check(ret, "GPU %d: list processes", i); err != nil {
			return nil, err
		}
		util, ok, err := b.processUtil(d, i)
		if err != nil {
			return nil, err
		}
		du := partitioner.DeviceUsage{GPU: i, GPUUUID: uuid, Device: uuid, GPUInstance: -1, Util: ok, Processes: []partitioner.ProcessUsage{}}
		for _, p := range procs {
			u := util[p.Pid]
			du.Processes = append(du.Processes, partitioner.ProcessUsage{PID: int(p.Pid), UsedMemoryMiB: bytesToMiB(p.UsedGpuMemory),
				SMUtil: int(u.SmUtil), MemUtil: int(u.MemUtil)})
		}
		out = append(out, du)
	}
	return out, nil
}

// processUtil reads the utilisation samples of GPU i newer than the last
// ones read, the newest per process; ok is false where NVML has none to
// give (not supported).
func (b *Backend) processUtil(d nvml.Device, i int) (map[uint32]nvml.ProcessUtilizationSample, bool, error) {
	samples, ret := d.GetProcessUtilization(b.lastSample[i])
	switch {
	case ret == nvml.ERROR_NOT_FOUND:
		return nil, true, nil // no process was busy since the last read
	case ret == nvml.ERROR_INSUFFICIENT_SIZE && len(samples) == 0:
		return nil, true, nil // go-nvml's answer when the driver counts no sample
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return nil, false, nil
	case ret != nvml.SUCCESS:
		return nil, false, check(ret, "GPU %d: read process utilisation", i)
	}
	out := map[uint32]nvml.ProcessUtilizationSample{}
	for _, s := range samples {
		b.lastSample[i] = max(b.lastSample[i], s.TimeStamp)
		if old, seen := out[s.Pid]; !seen || s.TimeStamp > old.TimeStamp {
			out[s.Pid] = s
		}
	}
	return out, true, nil
}
