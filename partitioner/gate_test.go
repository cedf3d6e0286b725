package partitioner

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestDecideGated works the gate by hand on TestReshareOnFinish's case:
// x (saturating at 98 SMs) runs at 50 % of a 7g, speed 0.5, alone since
// its co-runner finished; re-sharing it to 100 % (speed 1) gains 0.5 and
// restarts it. The restart is worth it when 0.5 x horizon > 0.5 x lost.
func TestDecideGated(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"a": 98, "b": 9.8}}
	for _, tc := range []struct {
		name    string
		typ     string
		costs   map[string]RestartCost
		verdict bool // a verdict is given
		restart bool
		cost    float64
		errHas  string
	}{
		{name: "gain beats cost", typ: "a", costs: map[string]RestartCost{"x": {Lost: 10, Horizon: 30}}, verdict: true, restart: true, cost: 5},
		{name: "cost beats gain", typ: "a", costs: map[string]RestartCost{"x": {Lost: 40, Horizon: 30}}, verdict: true, restart: false, cost: 20},
		{name: "just started", typ: "a", costs: map[string]RestartCost{"x": {Lost: 12, Horizon: 0}}, verdict: true, restart: false, cost: 6},
		{name: "already stopping", typ: "a", costs: nil, verdict: true, restart: true},
		{name: "no restart planned", typ: "b", costs: nil},
		{name: "negative cost", typ: "a", costs: map[string]RestartCost{"x": {Lost: -1, Horizon: 30}}, errHas: "job x: restart cost lost -1"},
		{name: "NaN horizon", typ: "a", costs: map[string]RestartCost{"x": {Lost: 1, Horizon: math.NaN()}}, errHas: "want numbers >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := Placed{Job: Job{ID: "x", Type: tc.typ}, Instance: 0, Percent: 50, Speed: 0.5}
			req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{left}}}}
			plan, v, err := DecideGated(req, est, Options{FixedMIG: true}, costsOf(tc.costs))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (v != nil) != tc.verdict {
				t.Fatalf("verdict %+v, want one: %v", v, tc.verdict)
			}
			restarted := len(plan.Changes) == 1 && slices.Equal(plan.Changes[0].Restart, []string{"x"})
			if restarted != tc.restart {
				t.Errorf("changes %+v: restart %v, want %v", plan.Changes, restarted, tc.restart)
			}
			if v == nil {
				return
			}
			if v.Restart != tc.restart || math.Abs(v.Gain-0.5) > 1e-9 || math.Abs(v.Cost-tc.cost) > 1e-9 || !slices.Equal(v.Restarts, []string{"x"}) {
				t.Errorf("verdict %+v, want restart %v, gain 0.5, cost %v", *v, tc.restart, tc.cost)
			}
			if !tc.restart && (len(plan.GPUs[0].Jobs) != 1 || plan.GPUs[0].Jobs[0].Percent != 50) {
				t.Errorf("kept plan %+v: want x at 50 %%", plan.GPUs[0].Jobs)
			}
			if s := v.String(); !strings.Contains(s, "restart cost") {
				t.Errorf("verdict text %q", s)
			}
		})
	}
}

// TestKeepRunning: the keeping plan changes no layout and no running
// job's share, and places new jobs in what is left: on a 7g where offline
// job a runs at 20 %, two new small jobs share the 80 % left, where the
// unrestricted plan splits the GPU into instances (TestNoMIGChangeUnderOnline).
func TestKeepRunning(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"small": 14}, interference: 0.5}
	running := Placed{Job: Job{ID: "a", Type: "small", MemoryMiB: 1000}, Instance: 0, Percent: 20, Speed: 1}
	req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{running}}},
		Pending: []Job{{ID: "b", Type: "small", MemoryMiB: 1000}, {ID: "c", Type: "small", MemoryMiB: 1000}}}
	plan, err := Decide(req, est, Options{KeepRunning: true})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.GPUs[0].Layout.Equal(req.GPUs[0].Layout) {
		t.Fatalf("layout changed to %s", plan.GPUs[0].Layout)
	}
	if len(plan.Changes) != 1 || len(plan.Changes[0].Restart) != 0 || len(plan.Changes[0].Start) != 2 {
		t.Fatalf("changes %+v: want b and c started, nothing restarted", plan.Changes)
	}
	sum := 0
	for _, p := range plan.GPUs[0].Jobs {
		if p.Job.ID == "a" && p.Percent != 20 {
			t.Errorf("a re-shared to %d %%", p.Percent)
		}
		sum += p.Percent
	}
	if sum > 100 {
		t.Errorf("shares sum to %d %%", sum)
	}
	gated, v, err := DecideGated(req, est, Options{}, costsOf(map[string]RestartCost{"a": {Lost: 1e6, Horizon: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || v.Restart || !gated.GPUs[0].Layout.Equal(req.GPUs[0].Layout) {
		t.Errorf("gated plan %s, verdict %+v: want the keeping plan", gated.GPUs[0].Layout, v)
	}
}

// costsOf answers DecideGated from a map.
func costsOf(m map[string]RestartCost) func(string) (RestartCost, bool) {
	return func(id string) (RestartCost, bool) {
		c, ok := m[id]
		return c, ok
	}
}
