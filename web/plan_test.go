package web

import (
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/node"
)

// samplePlan is an H100 cut in two with an online and an offline job
// sharing one instance under MPS, and a whole H200.
func samplePlan() node.PlanView {
	return node.PlanView{
		GPUs: []node.GPUView{
			{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4", SMs: 132, MemoryMiB: 81559,
				Instances: []node.InstanceView{
					{Name: "gpu0/gi1", Index: 0, Key: "gpu0-gi0", Profile: "3g.40gb", Start: 0, Size: 4, ComputeSlices: 3, SMs: 60, MemoryMiB: 40192, Device: "MIG-a0", MPS: true,
						Jobs: []node.PlacedView{
							{ID: "0000000000000001", Name: "bert", Kind: jobs.Online, State: jobs.Running, Percent: 60, Speed: 0.41},
							{ID: "0000000000000002", Name: "resnet", Kind: jobs.Offline, State: jobs.Running, Percent: 40, Speed: 0.22},
						}},
					{Name: "gpu0/gi2", Index: 1, Key: "gpu0-gi1", Profile: "3g.40gb", Start: 4, Size: 4, ComputeSlices: 3, SMs: 60, MemoryMiB: 40192, Device: "MIG-a1"},
				}},
			{Index: 1, UUID: "GPU-b", Name: "NVIDIA H200", Model: "H200-141GB", SMs: 132, MemoryMiB: 143771,
				Instances: []node.InstanceView{{Name: "gpu1", Index: 0, Key: "gpu1", Size: 8, ComputeSlices: 7, SMs: 132, MemoryMiB: 143771, Device: "GPU-b", MPS: true}}},
		},
		Waiting:      []string{"0000000000000003"},
		WaitingTotal: 1,
		Total:        0.63,
		Decisions:    7, DecideSeconds: 0.042,
	}
}

func sampleScheds() []node.SchedView {
	return []node.SchedView{
		{Instance: "gpu0-gi0", Name: "gpu0/gi1", Policy: "fikit", Socket: "/run/mmk/gpu0-gi0.sock",
			Counters: server.Counters{Tasks: 2, Kernels: 1000, AtOnce: 700, Held: 300, Filled: 120, FailOpens: 3, Went: 1, Observed: 250, Unobserved: 2, Quiet: 1, LoudLate: 4, BadReports: 6, Uncorroborated: 7, ReportsLimited: 8}},
		{Instance: "gpu1", Name: "gpu1", Policy: "mmk", Socket: "/run/mmk/gpu1.sock"},
	}
}

func TestPlanRoutes(t *testing.T) {
	ts := newTestServer(t)
	ts.node.SetPlan(samplePlan())
	ts.node.SetSchedulers(sampleScheds())
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts.node.AddReconfig(jobs.Reconfig{Time: base, GPU: 0, Cause: "arrival of job 0000000000000001", From: "7g.80gb@0", To: "3g.40gb@0+3g.40gb@4"})
	ts.node.AddReconfig(jobs.Reconfig{Time: base.Add(time.Minute), GPU: 1, Cause: "completion", From: "whole", To: "whole"})
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/api/v1/plan", 200, []string{`"layout":"3g.40gb@0+3g.40gb@4"`, `"mpsPercent":60`, `"waiting":["0000000000000003"]`, `"decisions":7`}},
		{"/api/v1/instances", 200, []string{`{"gpu":0,"gpuUUID":"GPU-a","name":"gpu0/gi1","index":0,"key":"gpu0-gi0"`, `{"gpu":0,"gpuUUID":"GPU-a","name":"gpu0/gi2","index":1,"key":"gpu0-gi1"`,
			`{"gpu":1,"gpuUUID":"GPU-b","name":"gpu1","index":0,"key":"gpu1","start":0`, `"mps":false,"jobs":[]`}},
		{"/api/v1/reconfigs", 200, []string{`[{"seq":2,`, `{"seq":1,`}},
		{"/api/v1/reconfigs?limit=1", 200, []string{`[{"seq":2,`}},
		{"/api/v1/reconfigs?limit=0", 400, []string{`"field":"limit"`}},
		{"/api/v1/reconfigs?limit=x", 400, []string{`"field":"limit"`}},
		{"/api/v1/kernelsched", 200, []string{`"instance":"gpu0-gi0","name":"gpu0/gi1","policy":"fikit"`, `"held":300`, `"fail_opens":3`}},
		{"/api/v1/plan?x=1", 400, []string{`"field":"x"`}},
	}
	for _, tt := range tests {
		r := ts.do(t, "GET", tt.path, "")
		if r.code != tt.status {
			t.Errorf("GET %s = %d %s", tt.path, r.code, r.body)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(r.body, w) {
				t.Errorf("GET %s: %s lacks %s", tt.path, r.body, w)
			}
		}
	}
	if r := ts.do(t, "GET", "/api/v1/reconfigs?limit=1", ""); strings.Contains(r.body, `"seq":1`) {
		t.Errorf("limit=1 returned more: %s", r.body)
	}
	if got := decode[[]instanceView](t, ts.do(t, "GET", "/api/v1/instances", "").body); len(got) != 3 || got[2].GPU != 1 {
		t.Errorf("instances %+v", got)
	}
}

// TestEmptyPlan checks that an empty node answers empty lists, not null.
func TestEmptyPlan(t *testing.T) {
	ts := newTestServer(t)
	for path, want := range map[string]string{
		"/api/v1/plan":        `{"version":0,"gpus":[],"waiting":[],"waitingTotal":0,"waitingJobs":[],"waitingByClass":{},"total":0,"decisions":0,"decideSeconds":0,"lastDecideSeconds":0}`,
		"/api/v1/instances":   `[]`,
		"/api/v1/reconfigs":   `[]`,
		"/api/v1/kernelsched": `[]`,
		"/api/v1/jobs":        `[]`,
	} {
		if r := ts.do(t, "GET", path, ""); r.code != 200 || r.body != want {
			t.Errorf("GET %s = %d %s, want %s", path, r.code, r.body, want)
		}
	}
}
