package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestJobUsage: the processes of a running job's process group that NVML
// lists on its device add up to the job's use (memory, utilisation where
// NVML gives it: not on a MIG instance, not to an MPS client; its peak,
// its MIG instance); a process of another group does not count; a job
// that ended keeps its history, not its use.
func TestJobUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		gpus []fakegpu.GPUSpec
		mps  bool
		util bool
	}{
		{"whole GPU", h200, false, true},
		{"whole GPU under MPS", h200, true, false},
		{"MIG instance", []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, b := fakeBackend(t, tc.gpus)
			h := newHarnessWith(t, tc.gpus, false, curveEstimator{}, nil, func(c *Config) {
				c.Backend, c.UsageEvery = b, 10*time.Millisecond
				if tc.mps {
					c.MPS = fakeMPS(t)
				}
				c.MemLimit = MemLimitConfig{MarginPct: 10}
			})
			child := filepath.Join(t.TempDir(), "child")
			_, gate := gated(t, "0")
			spec := sh("trainer", "sleep 30 & k=$!; echo $k > "+child+"; while [ ! -e "+gate+" ]; do sleep 0.01; done; kill $k; exit 0", "")
			spec.MemoryMiB = 4096
			j := h.state(h.submit(spec).ID, jobs.Running)
			var kid int
			h.until(j.ID, "its child's pid written", func(jobs.Job) bool {
				b, err := os.ReadFile(child)
				kid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				return err == nil && kid > 0
			})
			mig := ""
			if j.Placement.Profile != "" {
				mig = j.Placement.Device
			}
			for _, p := range []struct {
				pid      int
				mem      int64
				sm, mem2 uint32
			}{{j.PID, 1000, 30, 10}, {kid, 500, 20, 5}, {os.Getpid(), 700, 50, 50}} {
				if err := f.AttachProcess(j.Placement.GPU, mig, uint32(p.pid), p.mem); err != nil {
					t.Fatal(err)
				}
				if err := f.SetProcessUtilization(uint32(p.pid), p.sm, p.mem2); err != nil {
					t.Fatal(err)
				}
			}
			var u JobUsage
			h.until(j.ID, "its use sampled", func(jobs.Job) bool {
				for _, x := range h.n.Usage().Jobs {
					if x.ID == j.ID && x.Processes == 2 {
						u = x
						return true
					}
				}
				return false
			})
			limit := int64(0) // without MPS nothing enforces a limit
			if tc.mps {
				limit = 4505
			}
			if u.UsedMemoryMiB != 1500 || u.PeakMemoryMiB != 1500 || u.LimitMiB != limit || u.Device != j.Placement.Device || u.GPU != j.Placement.GPU {
				t.Errorf("use %+v: want 1500 MiB of the job's two processes on its device, limit %d", u, limit)
			}
			if u.Util != tc.util {
				t.Errorf("utilisation given: %v, want %v", u.Util, tc.util)
			}
			if tc.util && (u.SMUtil != 50 || u.MemUtil != 15) {
				t.Errorf("utilisation %d %% SM, %d %% memory, want 50 and 15", u.SMUtil, u.MemUtil)
			}
			if tc.gpus[0].MIG && (u.GPUInstance < 0 || u.Profile != j.Placement.Profile) {
				t.Errorf("MIG instance %d %q, want the placement's %q", u.GPUInstance, u.Profile, j.Placement.Profile)
			}
			if !tc.gpus[0].MIG && u.GPUInstance != -1 {
				t.Errorf("GPU instance %d on a GPU without MIG", u.GPUInstance)
			}
			if err := f.SetProcessMemory(uint32(j.PID), 200); err != nil {
				t.Fatal(err)
			}
			h.until(j.ID, "the drop sampled", func(jobs.Job) bool {
				v, err := h.n.JobUsage(j.ID)
				return err == nil && v.Usage != nil && v.Usage.UsedMemoryMiB == 700
			})
			v, _ := h.n.JobUsage(j.ID)
			if v.Usage.PeakMemoryMiB != 1500 || len(v.History) < 2 {
				t.Errorf("after the drop: peak %d MiB, %d samples; want the peak kept", v.Usage.PeakMemoryMiB, len(v.History))
			}
			open(t, gate)
			h.state(j.ID, jobs.Succeeded)
			f.DetachProcess(uint32(j.PID))
			f.DetachProcess(uint32(kid))
			h.until(j.ID, "no longer in use", func(jobs.Job) bool {
				v, err := h.n.JobUsage(j.ID)
				return err == nil && v.Usage == nil && len(v.History) > 0
			})
			if _, err := h.n.JobUsage("nope"); err == nil {
				t.Error("an unknown job's use")
			}
		})
	}
}

// TestJobUsageCountsItsCgroup: where jobs run in cgroups, a child that
// left the job's process group (setsid) still counts toward the job's
// use, as the kernel schedulers count it among the job's processes.
func TestJobUsageCountsItsCgroup(t *testing.T) {
	f, b := fakeBackend(t, h200)
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
		c.Backend, c.UsageEvery = b, 10*time.Millisecond
	})
	child := filepath.Join(t.TempDir(), "child")
	_, gate := gated(t, "0")
	spec := sh("trainer", "setsid sh -c 'echo $$ > "+child+"; exec sleep 30' & while [ ! -e "+gate+" ]; do sleep 0.01; done; exit 0", "")
	j := h.state(h.submit(spec).ID, jobs.Running)
	defer open(t, gate)
	var kid int
	h.until(j.ID, "its child's pid written", func(jobs.Job) bool {
		b, err := os.ReadFile(child)
		kid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && kid > 0
	})
	defer syscall.Kill(kid, syscall.SIGKILL)
	if jobs.JobOfProcess(kid) != j.ID {
		t.Skip("jobs do not run in cgroups here (cgroup v2 not writable)")
	}
	if pg, _ := jobs.ProcessGroup(kid); pg == j.PID {
		t.Fatalf("the child is still in the job's process group %d", pg)
	}
	if err := f.AttachProcess(j.Placement.GPU, "", uint32(kid), 900); err != nil {
		t.Fatal(err)
	}
	defer f.DetachProcess(uint32(kid))
	h.until(j.ID, "its child's memory sampled", func(jobs.Job) bool {
		for _, x := range h.n.Usage().Jobs {
			if x.ID == j.ID && x.Processes == 1 && x.UsedMemoryMiB == 900 {
				return true
			}
		}
		return false
	})
}
