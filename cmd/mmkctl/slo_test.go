package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/slo"
)

// TestSLOCommand (issue 53, item 4): `mmkctl slo` lists every online
// job's target, its percentile now against the bound, the window's late
// requests, attainment since it started and standing, each instance's
// rung with its last decision, and who is restrained how; -o json is the
// API's view.
func TestSLOCommand(t *testing.T) {
	n, addr := startMMKD(t, "")
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	v := node.SLOView{
		Jobs: []node.JobSLO{{ID: "0000000000000001", Name: "svc", Instance: "gpu0", Target: "p99=25ms", BoundMs: 25, Requests: 1000, Late: 30,
			Attainment: 0.97, RecentN: 200, RecentLate: 5, PctMs: 31.4, State: slo.Missed, Detail: "p99 31.4ms against 25ms", At: at}},
		Instances: []node.InstanceSLO{{Instance: "gpu0", Active: true, Ladder: []string{"priority", "hold", "suspend"}, Level: 2, Rung: "suspend",
			Suspended: []string{"0000000000000002"}, Unstopped: []string{"0000000000000003"}, Shielded: []string{"0000000000000004"},
			Unrestrainable: []string{"0000000000000005"},
			LastDecision:   &node.SLODecision{Time: at, From: 0, To: 2, Rung: "suspend", Reason: "priority -> suspend: tighten: svc#1 p99 31.4ms > 25ms"}}},
		Masks: []node.MaskView{{GPU: "gpu0", State: node.MasksOn, Why: "mapped: 62 TPCs of 72 slots (10 holes)", Ladder: []string{"priority", "tpcs=0.5", "suspend"}},
			{GPU: "gpu1", State: node.MasksMapping, Why: "taking the GPU's map", Probes: 74, ProbesDone: 9, Ladder: []string{"priority", "hold", "suspend"}}},
	}
	n.SetSLO(v)
	out, err := mmkctl(t, "slo", "--addr", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"0000000000000001", "p99=25ms", "p99 31.4ms / 25.0ms", "5 of 200", "97.0% of 1000", "missed",
		"suspend (2 of 2)", "priority -> suspend: tighten: svc#1 p99 31.4ms > 25ms",
		"gpu0: suspended: 0000000000000002",
		"gpu0: running for its progress floor (slo.max_stop): 0000000000000003",
		"gpu0: other users', reached by priority and guard only (slo.restrain_others): 0000000000000004",
		"gpu0: not restrainable, its hook never connected: 0000000000000005",
		"gpu0: TPC masks on (mapped: 62 TPCs of 72 slots (10 holes)); ladder priority, tpcs=0.5, suspend",
		"gpu1: TPC masks mapping, 9 of 74 probes (taking the GPU's map); ladder priority, hold, suspend",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mmkctl slo lacks %q:\n%s", want, out)
		}
	}
	out, err = mmkctl(t, "slo", "--addr", addr, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got node.SLOView
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Jobs) != 1 || got.Instances[0].LastDecision == nil || got.Instances[0].Shielded[0] != "0000000000000004" {
		t.Errorf("-o json: %v %+v", err, got)
	}
	n.SetSLO(node.SLOView{})
	if out, err := mmkctl(t, "slo", "--addr", addr); err != nil || !strings.Contains(out, "No online job has been measured.") {
		t.Errorf("empty: %q %v", out, err)
	}
}

// TestRestrainedJobShown (issue 53, item 3): a job restrained for
// another's target says so in `mmkctl jobs` (its state), `-o wide` (its
// reason: how, for whom, the decision) and `mmkctl job`.
func TestRestrainedJobShown(t *testing.T) {
	n, addr := startMMKD(t, "")
	now := time.Now()
	n.Put(jobs.Job{ID: "0000000000000002", Spec: jobs.Spec{Name: "train", Kind: jobs.Offline, Command: []string{"python3", "train.py"}},
		State: jobs.Running, CreatedAt: now, UpdatedAt: now,
		Restraint: &jobs.Restraint{State: "suspended", How: "suspended", Rung: "suspend", For: []string{"0000000000000001"},
			Reason: "priority -> suspend: tighten: svc#1 p99 31.4ms > 25ms"}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs"}, "running (suspended)"},
		{[]string{"jobs", "-o", "wide"}, "suspended for job 0000000000000001: priority -> suspend: tighten: svc#1 p99 31.4ms > 25ms"},
		{[]string{"job", "0000000000000002"}, "Restrained:"},
	} {
		out, err := mmkctl(t, append(tc.args, "--addr", addr)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("mmkctl %v lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
}
