package partitioner

import (
	"slices"
	"testing"
)

// Tests named for the lines of MMK's Algorithm 1 they check, and for the
// options that depart from them (issue 21).

// TestMPSConfigLines28to32FullDemand: MPSConfig gives a job its whole
// demand or stops (lines 28-32). On a 7g (98 SMs) where a running online
// job keeps 80 %, an offline job of demand 40 % does not go in under
// FullDemand; without it, it takes the 20 % left, a sliver. A job whose
// demand is the 20 % left goes in either way.
func TestMPSConfigLines28to32FullDemand(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"on": 78.4, "mid": 39.2, "fast": 19.6}}
	running := Placed{Job: Job{ID: "on", Type: "on", Online: true, MemoryMiB: 1000}, Instance: 0, Percent: 80, Speed: 1}
	for _, tc := range []struct {
		name     string
		pending  string
		full     bool
		placedAt int // 0: waits
	}{
		{"sliver without FullDemand", "mid", false, 20},
		{"stop with FullDemand", "mid", true, 0},
		{"demand fits", "fast", true, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{running}}}, Pending: []Job{{ID: "b", Type: tc.pending, MemoryMiB: 1000}}}
			plan, err := Decide(req, est, Options{FixedMIG: true, FixOnlinePercent: true, FullDemand: tc.full})
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, p := range plan.GPUs[0].Jobs {
				if p.Job.ID == "b" {
					got = p.Percent
				}
				if p.Job.ID == "on" && p.Percent != 80 {
					t.Errorf("the online job was re-shared to %d %%", p.Percent)
				}
			}
			if got != tc.placedAt || (got == 0) != (len(plan.Waiting) == 1) {
				t.Errorf("b at %d %% (waiting %v), want %d", got, plan.Waiting, tc.placedAt)
			}
		})
	}
}

// TestOnlineReclaim: an online job left at a sliver (20 % against a
// demand of 80 %) keeps it under MMK's QoS rule once its co-runner is
// gone; with OnlineReclaim it takes its demand back, a restart.
func TestOnlineReclaim(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"on": 78.4}}
	sliver := Placed{Job: Job{ID: "on", Type: "on", Online: true}, Instance: 0, Percent: 20, Speed: 0.25}
	for _, reclaim := range []bool{false, true} {
		req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{sliver}}}}
		plan, err := Decide(req, est, Options{FixedMIG: true, FixOnlinePercent: true, OnlineReclaim: reclaim})
		if err != nil {
			t.Fatal(err)
		}
		pct := plan.GPUs[0].Jobs[0].Percent
		restarted := len(plan.Changes) == 1 && slices.Equal(plan.Changes[0].Restart, []string{"on"})
		if want := map[bool]int{false: 20, true: 80}[reclaim]; pct != want || restarted != reclaim {
			t.Errorf("reclaim %v: online at %d %%, restarted %v; want %d %%, restart %v", reclaim, pct, restarted, want, reclaim)
		}
	}
}

// TestAlgorithm1Line12MIGUnderOnline: line 12 leaves the layout of a GPU
// where an online job runs as it is. MIGKeepOnline changes it where the
// new layout keeps the online job's instance (3g.40gb@4) and share: the
// 4g holding an offline job is split for the small arrivals, and only
// the offline job restarts.
func TestAlgorithm1Line12MIGUnderOnline(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"small": 14, "on": 42}, interference: 0.5}
	cur := GPUPlan{Layout: layout(t, m, "4g.40gb@0+3g.40gb@4"), Jobs: []Placed{
		{Job: Job{ID: "off", Type: "small", MemoryMiB: 1000}, Instance: 0, Percent: 100, Speed: 1},
		{Job: Job{ID: "on", Type: "on", Online: true, MemoryMiB: 1000}, Instance: 1, Percent: 100, Speed: 1},
	}}
	pending := []Job{{ID: "s1", Type: "small", MemoryMiB: 1000}, {ID: "s2", Type: "small", MemoryMiB: 1000}, {ID: "s3", Type: "small", MemoryMiB: 1000}}
	for _, keep := range []bool{false, true} {
		plan, err := Decide(Request{GPUs: []GPUPlan{cur}, Pending: pending}, est, Options{FixOnlinePercent: true, MIGKeepOnline: keep})
		if err != nil {
			t.Fatal(err)
		}
		changed := !plan.GPUs[0].Layout.Equal(cur.Layout)
		if changed != keep {
			t.Fatalf("MIGKeepOnline %v: layout %s, changed %v", keep, plan.GPUs[0].Layout, changed)
		}
		if !keep {
			continue
		}
		ch := plan.Changes[0]
		if ch.MIG == nil || slices.Contains(ch.Restart, "on") || !slices.Contains(ch.Restart, "off") {
			t.Errorf("change %+v: want a MIG step restarting off, not on", ch)
		}
		if !slices.ContainsFunc(ch.MIG.Kept, func(in GPUInstance) bool { return in.String() == "3g.40gb@4" }) {
			t.Errorf("kept %v: want the online job's 3g.40gb@4", ch.MIG.Kept)
		}
		for _, p := range plan.GPUs[0].Jobs {
			if p.Job.ID == "on" && (plan.GPUs[0].Layout.Instances[p.Instance].String() != "3g.40gb@4" || p.Percent != 100) {
				t.Errorf("online job moved to %s at %d %%", plan.GPUs[0].Layout.Instances[p.Instance], p.Percent)
			}
		}
		if len(plan.Waiting) != 0 {
			t.Errorf("waiting %v", plan.Waiting)
		}
	}
}

// TestOnlineFirst: Algorithm 1 places the largest memory first (line 1),
// so with one place left an offline job takes it before a smaller online
// one; OnlineFirst places online jobs first.
func TestOnlineFirst(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"j": 98}}
	pending := []Job{{ID: "off", Type: "j", MemoryMiB: 9000}, {ID: "on", Type: "j", Online: true, MemoryMiB: 1000}}
	for _, first := range []bool{false, true} {
		plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: pending}, est, Options{FixedMIG: true, MaxJobsPerInstance: 1, OnlineFirst: first})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "off", true: "on"}[first]
		if len(plan.GPUs[0].Jobs) != 1 || plan.GPUs[0].Jobs[0].Job.ID != want {
			t.Errorf("OnlineFirst %v: placed %+v, want %s", first, plan.GPUs[0].Jobs, want)
		}
	}
}

// TestSLOGuard: an online job that needs speed 0.6 goes into the 4g
// (56 of 98 SMs: 0.57 for a job saturating at 98) only without the
// guard; with it, into the 7g of the other GPU, even though the offline
// job there lowers the total; a job needing more than any instance
// gives waits.
func TestSLOGuard(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"on": 98, "off": 98}, interference: 0.3}
	gpus := []GPUPlan{
		{Layout: layout(t, m, "4g.40gb@0+3g.40gb@4")},
		{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{{Job: Job{ID: "x", Type: "off", MemoryMiB: 1000}, Instance: 0, Percent: 100, Speed: 1}}},
	}
	for _, tc := range []struct {
		guard    bool
		min      float64
		wantGPU  int // -1: waits
		wantInst string
	}{
		{false, 0.6, 0, "4g.40gb@0"},
		{true, 0.6, 1, "7g.80gb@0"},
		{true, 1.01, -1, ""},
	} {
		on := Job{ID: "on", Type: "on", Online: true, MemoryMiB: 1000, MinSpeed: tc.min}
		plan, err := Decide(Request{GPUs: gpus, Pending: []Job{on}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, SLOGuard: tc.guard})
		if err != nil {
			t.Fatal(err)
		}
		gotGPU, gotInst := -1, ""
		for g, gp := range plan.GPUs {
			for _, p := range gp.Jobs {
				if p.Job.ID == "on" {
					gotGPU, gotInst = g, gp.Layout.Instances[p.Instance].String()
				}
			}
		}
		if gotGPU != tc.wantGPU || gotInst != tc.wantInst {
			t.Errorf("guard %v, min %.2f: placed on gpu %d %s, want %d %s", tc.guard, tc.min, gotGPU, gotInst, tc.wantGPU, tc.wantInst)
		}
	}
}
