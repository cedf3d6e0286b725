package fakegpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// SetProcessMemory changes the memory a process attached by AttachProcess
// uses, as a CUDA client that allocates or frees would.
func (f *Fake) SetProcessMemory(pid uint32, memMiB int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.process(pid)
	if p == nil {
		return fmt.Errorf("no process %d on any GPU", pid)
	}
	if memMiB < 0 {
		return fmt.Errorf("process %d: memory %d MiB is negative", pid, memMiB)
	}
	p.memMiB = memMiB
	return nil
}

// SetProcessUtilization sets how busy a process is from now on: the
// percent of each sample period its kernels run on the SMs (sm) and read
// or write memory (mem). The driver samples a busy process continuously,
// so every read of utilisation finds a new sample of it until it is set
// idle (0, 0).
func (f *Fake) SetProcessUtilization(pid uint32, sm, mem uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.process(pid)
	if p == nil {
		return fmt.Errorf("no process %d on any GPU", pid)
	}
	if sm > 100 || mem > 100 {
		return fmt.Errorf("process %d: utilisation %d %% SM, %d %% memory: want 0 to 100", pid, sm, mem)
	}
	p.smUtil, p.memUtil = sm, mem
	return nil
}

// process finds an attached process; the caller holds the lock.
func (f *Fake) process(pid uint32) *process {
	for _, g := range f.gpus {
		for i := range g.processes {
			if g.processes[i].pid == pid {
				return &g.processes[i]
			}
		}
	}
	return nil
}

// GetProcessUtilization returns, as nvmlDeviceGetProcessUtilization
// does, a sample of each busy process of the GPU newer than lastSeen
// (time moves on a millisecond at each call, and a busy process is
// sampled at each); ERROR_NOT_FOUND when there is none, and
// ERROR_NOT_SUPPORTED on a GPU with MIG enabled (NVML gives no
// per-process utilisation there).
func (d *device) GetProcessUtilization(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if d.gpu.migCurrent {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	f := d.gpu.fake
	f.clock += 1000
	var out []nvml.ProcessUtilizationSample
	for _, p := range d.gpu.processes {
		if f.clock > lastSeen && (p.smUtil > 0 || p.memUtil > 0) {
			out = append(out, nvml.ProcessUtilizationSample{Pid: p.pid, TimeStamp: f.clock, SmUtil: p.smUtil, MemUtil: p.memUtil})
		}
	}
	if len(out) == 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return out, nvml.SUCCESS
}

// GetProcessUtilization is not supported on a MIG device.
func (m *migDevice) GetProcessUtilization(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}
