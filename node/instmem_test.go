package node

import (
	"os"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestInstanceMemory: the plan gives each placed job's memory and each
// instance the memory its placed jobs asked for (requested) and its
// running jobs asked for; the usage view gives each device the memory
// NVML measures on it, every process counted, a job's or not (issue 37,
// item 8: the dashboard's memory bars).
func TestInstanceMemory(t *testing.T) {
	tests := []struct {
		name string
		gpus []fakegpu.GPUSpec
		// attach is memory attached to the job's device by processes
		// of the job and of another program.
		job, other int64
	}{
		{"whole GPU", h200, 1500, 700},
		{"MIG instance", []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"}}, 2500, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, b := fakeBackend(t, tc.gpus)
			h := newHarnessWith(t, tc.gpus, false, curveEstimator{"half_train": 50}, nil, func(c *Config) {
				c.Backend, c.UsageEvery = b, 10*time.Millisecond
			})
			script, gate := gated(t, "0")
			defer open(t, gate)
			a := sh("a", script, "half")
			a.MemoryMiB = 4096
			c := sh("c", script, "half")
			c.MemoryMiB = 8192
			ja := h.state(h.submit(a).ID, jobs.Running)
			jc := h.state(h.submit(c).ID, jobs.Running)
			var inst InstanceView
			deadline := time.Now().Add(10 * time.Second)
			for {
				v := h.n.Plan()
				if len(v.GPUs) == 1 && len(v.GPUs[0].Instances) == 1 && len(v.GPUs[0].Instances[0].Jobs) == 2 {
					inst = v.GPUs[0].Instances[0]
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("plan %+v: want both jobs in the one instance", v)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if inst.RequestedMiB != 12288 || inst.RunningMiB != 12288 {
				t.Errorf("instance requested %d MiB, running %d MiB; want 12288 of the two jobs' 4096 + 8192", inst.RequestedMiB, inst.RunningMiB)
			}
			mem := map[string]int64{}
			for _, p := range inst.Jobs {
				mem[p.ID] = p.MemoryMiB
			}
			if mem[ja.ID] != 4096 || mem[jc.ID] != 8192 {
				t.Errorf("placed jobs' memory %v, want %s 4096 and %s 8192", mem, ja.ID, jc.ID)
			}
			mig := ""
			if ja.Placement.Profile != "" {
				mig = ja.Placement.Device
			}
			if err := f.AttachProcess(ja.Placement.GPU, mig, uint32(ja.PID), tc.job); err != nil {
				t.Fatal(err)
			}
			defer f.DetachProcess(uint32(ja.PID))
			if tc.other > 0 {
				if err := f.AttachProcess(ja.Placement.GPU, mig, uint32(os.Getpid()), tc.other); err != nil {
					t.Fatal(err)
				}
				defer f.DetachProcess(uint32(os.Getpid()))
			}
			want := DeviceMemory{Device: inst.Device, GPU: ja.Placement.GPU, GPUInstance: -1, Processes: 1, UsedMemoryMiB: tc.job + tc.other}
			if tc.other > 0 {
				want.Processes = 2
			}
			if inst.GI != nil {
				want.GPUInstance = *inst.GI
			}
			var got []DeviceMemory
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				got = h.n.Usage().Devices
				if len(got) == 1 && got[0] == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("devices' memory %+v, want %+v", got, want)
				}
			}
		})
	}
}
