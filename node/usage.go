package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// usageKeep is how many samples of each job's GPU use the node keeps
// (ten minutes at the default interval of a second).
const usageKeep = 600

// JobUsage is a running job's use of its GPU device at the last sample:
// the sum over the job's processes (its cgroup, else its process group)
// that NVML lists on the device.
type JobUsage struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// GPU, GPUUUID and Device are where the job runs (Device: the GPU's
	// or MIG device's UUID); GPUInstance and Profile its MIG instance
	// (-1 and "" without MIG).
	GPU         int    `json:"gpu"`
	GPUUUID     string `json:"gpuUUID"`
	Device      string `json:"device"`
	GPUInstance int    `json:"gpuInstance"`
	Profile     string `json:"profile,omitempty"`
	// Processes counts the job's processes on the device.
	Processes int `json:"processes"`
	// UsedMemoryMiB is their device memory now; PeakMemoryMiB the most
	// seen in this run of the job; LimitMiB its MPS memory limit (0:
	// none).
	UsedMemoryMiB int64 `json:"usedMemoryMiB"`
	PeakMemoryMiB int64 `json:"peakMemoryMiB"`
	LimitMiB      int64 `json:"limitMiB,omitempty"`
	// Util says whether NVML gave utilisation (not with MIG, not to MPS
	// clients): SMUtil and
	// MemUtil are the percent of the last interval the job's kernels ran
	// and its memory was read or written.
	Util    bool      `json:"util"`
	SMUtil  int       `json:"smUtil"`
	MemUtil int       `json:"memUtil"`
	At      time.Time `json:"at"`
}

// UsageSample is one point of a job's GPU use over time.
type UsageSample struct {
	At            time.Time `json:"t"`
	UsedMemoryMiB int64     `json:"usedMemoryMiB"`
	Util          bool      `json:"util"`
	SMUtil        int       `json:"smUtil"`
	MemUtil       int       `json:"memUtil"`
}

// UsageView is the running jobs' GPU use at the last sample.
type UsageView struct {
	// At is when it was sampled (zero before the first sample); Every
	// is the sampling interval (0: not sampled, the backend cannot say).
	At    time.Time     `json:"at"`
	Every time.Duration `json:"everyNs"`
	Jobs  []JobUsage    `json:"jobs"`
	// Devices are the GPU memory NVML measured on each device at the
	// last sample, in GPU and GPU-instance order.
	Devices []DeviceMemory `json:"devices"`
}

// DeviceMemory is the GPU memory in use on one CUDA device (a GPU
// without MIG, or a MIG device: PlanView's InstanceView.Device) at the
// last sample: every process NVML lists there, a job's or not.
type DeviceMemory struct {
	Device string `json:"device"`
	// GPU is the GPU's index; GPUInstance the MIG GPU instance's id (-1
	// without MIG).
	GPU         int `json:"gpu"`
	GPUInstance int `json:"gpuInstance"`
	// Processes counts the processes on it; UsedMemoryMiB is the
	// memory they hold.
	Processes     int   `json:"processes"`
	UsedMemoryMiB int64 `json:"usedMemoryMiB"`
}

// JobUsageView is one job's GPU use now (nil when it does not run) and
// over its last samples, oldest first.
type JobUsageView struct {
	Usage   *JobUsage     `json:"usage"`
	History []UsageSample `json:"history"`
}

// jobUsage is what the node keeps of one job's use.
type jobUsage struct {
	started time.Time // the run the samples are of
	last    JobUsage
	live    bool // last is of the latest sample
	// listed says NVML listed a process of the job in some sample.
	listed  bool
	history []UsageSample
}

// Usage is the running jobs' GPU use at the last sample.
func (n *Node) Usage() UsageView {
	n.usageMu.Lock()
	defer n.usageMu.Unlock()
	v := UsageView{At: n.usageAt, Jobs: []JobUsage{}, Devices: slices.Clone(n.usageDevices)}
	if v.Devices == nil {
		v.Devices = []DeviceMemory{}
	}
	if n.usageReader() != nil {
		v.Every = n.cfg.UsageEvery
	}
	for _, u := range n.usage {
		if u.live {
			v.Jobs = append(v.Jobs, u.last)
		}
	}
	slices.SortFunc(v.Jobs, func(a, b JobUsage) int { return strings.Compare(a.ID, b.ID) })
	return v
}

// JobUsage is one job's GPU use now and over its last samples.
func (n *Node) JobUsage(id string) (JobUsageView, error) {
	if _, ok := n.get(id); !ok {
		return JobUsageView{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	n.usageMu.Lock()
	defer n.usageMu.Unlock()
	v := JobUsageView{History: []UsageSample{}}
	if u, ok := n.usage[id]; ok {
		if u.live {
			last := u.last
			v.Usage = &last
		}
		v.History = slices.Clone(u.history)
	}
	return v, nil
}

// usagePeak is the most memory NVML saw the job's processes hold in its
// run that started at started; ok is false when no sample listed a
// process of it.
func (n *Node) usagePeak(id string, started time.Time) (peak int64, ok bool) {
	n.usageMu.Lock()
	defer n.usageMu.Unlock()
	u, found := n.usage[id]
	if !found || !u.started.Equal(started) || !u.listed {
		return 0, false
	}
	return u.last.PeakMemoryMiB, true
}

// usageReader is the backend's usage reader, nil when it has none.
func (n *Node) usageReader() partitioner.UsageReader {
	r, _ := n.cfg.Backend.(partitioner.UsageReader)
	return r
}

// poll calls sample every UsageEvery until ctx ends, logging a failure
// once until it changes or clears (what says what was read).
func (n *Node) poll(ctx context.Context, what string, sample func() error) {
	t := time.NewTicker(n.cfg.UsageEvery)
	defer t.Stop()
	lastErr := ""
	for {
		err := sample()
		switch {
		case err != nil && err.Error() != lastErr:
			n.cfg.Log.Warn(what+"; trying again", "err", err)
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleUsage reads every device's compute processes and gives each
// running job the sum of its processes (those of its cgroup, else its
// process group) on its device.
func (n *Node) sampleUsage(r partitioner.UsageReader) error {
	devs, err := r.Usage()
	if err != nil {
		return err
	}
	now := n.cfg.Now()
	type run struct {
		id, name string
		started  time.Time
		pl       jobs.Placement
	}
	byGroup := map[int]run{}
	byID := map[string]run{}
	n.mu.RLock()
	for _, j := range n.order {
		if j.State == jobs.Running && j.Placement != nil && j.PID > 0 {
			r := run{id: j.ID, name: j.Spec.Name, started: j.StartedAt, pl: *j.Placement}
			byGroup[j.PID], byID[j.ID] = r, r
		}
	}
	n.mu.RUnlock()
	byDevice := map[string]partitioner.DeviceUsage{}
	sums := map[string]*JobUsage{}
	mem := make([]DeviceMemory, 0, len(devs))
	for _, d := range devs {
		byDevice[d.Device] = d
		dm := DeviceMemory{Device: d.Device, GPU: d.GPU, GPUInstance: d.GPUInstance, Processes: len(d.Processes)}
		for _, p := range d.Processes {
			dm.UsedMemoryMiB += p.UsedMemoryMiB // every process, a job's or not
			// A process belongs to the job whose cgroup holds it (a child
			// that left the job's process group too), else to the job
			// whose process group it is in: as the kernel schedulers
			// identify their tasks (jobOfProcess).
			j, ok := byGroup[p.PID]
			if !ok {
				j, ok = byID[jobs.JobOfProcess(p.PID)]
			}
			if !ok {
				pg, err := jobs.ProcessGroup(p.PID)
				if err != nil {
					continue // gone, or not of this node's pid namespace
				}
				if j, ok = byGroup[pg]; !ok {
					continue
				}
			}
			if j.pl.Device != d.Device {
				continue
			}
			s := sums[j.id]
			if s == nil {
				s = &JobUsage{}
				sums[j.id] = s
			}
			s.Processes++
			s.UsedMemoryMiB += p.UsedMemoryMiB
			s.SMUtil = min(100, s.SMUtil+p.SMUtil)
			s.MemUtil = min(100, s.MemUtil+p.MemUtil)
		}
		mem = append(mem, dm)
	}
	n.usageMu.Lock()
	defer n.usageMu.Unlock()
	n.usageAt = now
	slices.SortFunc(mem, func(a, b DeviceMemory) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.GPUInstance, b.GPUInstance))
	})
	n.usageDevices = mem
	for _, u := range n.usage {
		u.live = false
	}
	for _, j := range byGroup {
		d, ok := byDevice[j.pl.Device]
		if !ok {
			continue // its device is gone
		}
		// Under MPS the driver runs every client's kernels in the MPS
		// server: NVML lists the clients with their memory but gives them
		// no utilisation (measured on an H100, docs/operations.md), so
		// none is reported rather than a 0 that reads as idle.
		ju := JobUsage{ID: j.id, Name: j.name, GPU: d.GPU, GPUUUID: d.GPUUUID, Device: d.Device, GPUInstance: d.GPUInstance,
			Profile: d.Profile, LimitMiB: j.pl.MemLimitMiB, Util: d.Util && n.cfg.MPS == nil, At: now}
		if s := sums[j.id]; s != nil {
			ju.Processes, ju.UsedMemoryMiB, ju.SMUtil, ju.MemUtil = s.Processes, s.UsedMemoryMiB, s.SMUtil, s.MemUtil
		}
		u := n.usage[j.id]
		if u == nil || !u.started.Equal(j.started) {
			u = &jobUsage{started: j.started}
			n.usage[j.id] = u
		}
		ju.PeakMemoryMiB = max(u.last.PeakMemoryMiB, ju.UsedMemoryMiB)
		u.last, u.live = ju, true
		u.listed = u.listed || ju.Processes > 0
		u.history = append(u.history, UsageSample{At: now, UsedMemoryMiB: ju.UsedMemoryMiB, Util: ju.Util, SMUtil: ju.SMUtil, MemUtil: ju.MemUtil})
		if len(u.history) > usageKeep {
			u.history = slices.Delete(u.history, 0, len(u.history)-usageKeep)
		}
	}
	// A job that stopped running keeps its samples for a while (its
	// page's chart, the exit's evidence), then they go.
	keep := time.Duration(usageKeep) * n.cfg.UsageEvery
	for id, u := range n.usage {
		if !u.live && (len(u.history) == 0 || now.Sub(u.history[len(u.history)-1].At) > keep) {
			delete(n.usage, id)
		}
	}
	return nil
}
