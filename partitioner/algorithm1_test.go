package partitioner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// curveEstimator is a hand-checkable stp: a job's speed grows linearly
// with the SMs it gets (instance SMs x percent) until its saturation
// point, and every co-runner multiplies it by 1 - interference.
type curveEstimator struct {
	saturate     map[string]float64 // SMs at which a type reaches speed 1
	interference float64
	calls        int
}

func (e *curveEstimator) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	e.calls++
	sat, ok := e.saturate[j.Type]
	if !ok {
		return 0, fmt.Errorf("no curve for %s", j.Type)
	}
	s := math.Min(1, float64(sms)*float64(percent)/100/sat)
	return s * math.Pow(1-e.interference, float64(len(co))), nil
}

func a100(t *testing.T) *Model {
	t.Helper()
	m, err := LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func layout(t *testing.T, m *Model, text string) Layout {
	t.Helper()
	l, err := ParseLayout(m, text)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func profilesIn(l Layout) string {
	var names []string
	for _, in := range l.Instances {
		names = append(names, strings.SplitN(in.Profile.Name, ".", 2)[0])
	}
	slices.Sort(names)
	slices.Reverse(names)
	return strings.Join(names, ",")
}

// TestObservation1 is MMK's observation 1: for ResNet152 + ResNet50 +
// VGG16, [4g, 3g] (ResNet152 alone, the two others sharing through MPS)
// beats [3g, 2g, 2g] when the model says sharing costs little, and loses
// when it says sharing costs much. Hand-worked on the A100-80GB (4g: 56
// SMs, 3g: 42, 2g: 28, 1g: 14), with ResNet152 saturating at 56 SMs and
// the others at 21:
//
//	interference 0.05: [4g,3g] = 1 + 0.95 + 0.95 = 2.90 > [3g,2g,2g] = 0.75 + 1 + 1 = 2.75
//	interference 0.30: [4g,3g] = 1 + 0.70 + 0.70 = 2.40 < 2.75
func TestObservation1(t *testing.T) {
	m := a100(t)
	jobs := []Job{
		{ID: "r152", Type: "resnet152_train", MemoryMiB: 9000},
		{ID: "r50", Type: "resnet50_train", MemoryMiB: 5000},
		{ID: "vgg", Type: "vgg16_train", MemoryMiB: 8000},
	}
	for _, tc := range []struct {
		interference float64
		want         string
		total        float64
	}{
		{0.05, "4g,3g", 2.90},
		{0.30, "3g,2g,2g", 2.75},
	} {
		t.Run(fmt.Sprint(tc.interference), func(t *testing.T) {
			est := &curveEstimator{saturate: map[string]float64{"resnet152_train": 56, "resnet50_train": 21, "vgg16_train": 21}, interference: tc.interference}
			plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: jobs}, est, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := profilesIn(plan.GPUs[0].Layout); got != tc.want {
				t.Errorf("layout %s (%s), want %s", got, plan.GPUs[0].Layout, tc.want)
			}
			if math.Abs(plan.Total-tc.total) > 1e-9 {
				t.Errorf("total %.4f, want %.2f", plan.Total, tc.total)
			}
			if len(plan.Waiting) != 0 || len(plan.Changes) != 1 || plan.Changes[0].MIG == nil || len(plan.Changes[0].Start) != 3 {
				t.Errorf("changes %+v, waiting %v: want one MIG change starting 3 jobs", plan.Changes, plan.Waiting)
			}
		})
	}
}

// TestNoMIGChangeUnderOnline: a GPU where an online job runs keeps its
// layout (MMK's rule); new jobs go into its instances through MPS. Without
// an online job, or with MIGUnderOnline (MIGER-like), the layout changes.
func TestNoMIGChangeUnderOnline(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"small": 14, "big": 98}, interference: 0.5}
	newJobs := []Job{{ID: "b", Type: "small", MemoryMiB: 1000}, {ID: "c", Type: "small", MemoryMiB: 1000}}
	for _, tc := range []struct {
		name      string
		online    bool
		opt       Options
		migChange bool
	}{
		{"online runs", true, Options{}, false},
		{"offline runs", false, Options{}, true},
		{"online runs, MIGER-like", true, Options{MIGUnderOnline: true}, true},
		{"offline runs, MIG fixed", false, Options{FixedMIG: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := Placed{Job: Job{ID: "a", Type: "small", Online: tc.online, MemoryMiB: 1000}, Instance: 0, Percent: 20, Speed: 1}
			req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{running}}}, Pending: newJobs}
			plan, err := Decide(req, est, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			changed := !plan.GPUs[0].Layout.Equal(req.GPUs[0].Layout)
			if changed != tc.migChange {
				t.Fatalf("layout %s: changed %v, want %v", plan.GPUs[0].Layout, changed, tc.migChange)
			}
			if len(plan.Waiting) != 0 {
				t.Errorf("waiting %v", plan.Waiting)
			}
			if changed {
				// Three small jobs, interference 0.5: one per instance.
				if plan.Changes[0].MIG == nil || !slices.Contains(plan.Changes[0].Restart, "a") {
					t.Errorf("change %+v: want a MIG step that restarts a", plan.Changes[0])
				}
				return
			}
			for _, p := range plan.GPUs[0].Jobs {
				if p.Job.ID == "a" && tc.online && p.Percent != 20 {
					t.Errorf("running online job re-shared to %d %%", p.Percent)
				}
			}
		})
	}
}

// TestMPSConfig works one instance's shares by hand: on a 7g (98 SMs)
// with no interference, demands are the smallest percentages reaching 95 %
// of full speed: fast (saturates at 19.6 SMs) 20 %, mid (39.2) 40 %,
// slow (98) 100 %. Sorted by speed per share (fast 1/20, mid 1/40, slow
// 0.2/20...), fast and mid get their demands, slow the 40 % left.
func TestMPSConfig(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"fast": 19.6, "mid": 39.2, "slow": 98}}
	jobs := []Job{{ID: "s", Type: "slow"}, {ID: "m", Type: "mid"}, {ID: "f", Type: "fast"}}
	plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: jobs}, est, Options{FixedMIG: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range plan.GPUs[0].Jobs {
		got[p.Job.ID] = p.Percent
	}
	want := map[string]int{"f": 20, "m": 40, "s": 40}
	for id, pct := range want {
		if got[id] != pct {
			t.Errorf("%s at %d %%, want %d (all: %v)", id, got[id], pct, got)
		}
	}
	if math.Abs(plan.Total-(1+1+0.4)) > 1e-9 {
		t.Errorf("total %.3f, want 2.4", plan.Total)
	}
}

// TestWaiting: jobs wait when no instance has the memory, or when the
// instance's SM share is spent (ten jobs at 10 % each).
func TestWaiting(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"tiny": 1, "huge": 1}}
	var jobs []Job
	for i := range 11 {
		jobs = append(jobs, Job{ID: fmt.Sprintf("t%02d", i), Type: "tiny", MemoryMiB: 100})
	}
	jobs = append(jobs, Job{ID: "h", Type: "huge", MemoryMiB: 200_000})
	plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: jobs}, est, Options{FixedMIG: true})
	if err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for _, j := range plan.Waiting {
		waiting = append(waiting, j.ID)
	}
	if !slices.Equal(waiting, []string{"t10", "h"}) {
		t.Errorf("waiting %v, want [t10 h] (arrival order)", waiting)
	}
	if len(plan.GPUs[0].Jobs) != 10 {
		t.Errorf("%d jobs placed, want 10", len(plan.GPUs[0].Jobs))
	}
}

// TestReshareOnFinish: when a co-runner finishes, the offline job left
// gets the freed share (a restart: MPS fixes a client's percentage), but
// only when that raises speed by MinGain.
func TestReshareOnFinish(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"a": 98, "b": 9.8}}
	for _, tc := range []struct {
		typ     string
		restart bool
	}{
		{"a", true},  // 50 % -> 100 %: speed 0.5 -> 1
		{"b", false}, // saturated at 10 %: no gain, no restart
	} {
		t.Run(tc.typ, func(t *testing.T) {
			left := Placed{Job: Job{ID: "x", Type: tc.typ}, Instance: 0, Percent: 50, Speed: 0.5}
			plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{left}}}}, est, Options{FixedMIG: true})
			if err != nil {
				t.Fatal(err)
			}
			restarted := len(plan.Changes) == 1 && slices.Equal(plan.Changes[0].Restart, []string{"x"})
			if restarted != tc.restart {
				t.Errorf("changes %+v: restart %v, want %v", plan.Changes, restarted, tc.restart)
			}
		})
	}
}

// TestDecideSpreadsOverGPUs: with two GPUs of one 7g each and jobs that
// interfere, the greedy step puts them on different GPUs.
func TestDecideSpreadsOverGPUs(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"j": 98}, interference: 0.5}
	gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb")}, {Layout: layout(t, m, "7g.80gb")}}
	plan, err := Decide(Request{GPUs: gpus, Pending: []Job{{ID: "1", Type: "j"}, {ID: "2", Type: "j"}}}, est, Options{FixedMIG: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.GPUs[0].Jobs) != 1 || len(plan.GPUs[1].Jobs) != 1 || plan.Total != 2 {
		t.Errorf("plan %+v, want one job per GPU at speed 1", plan.GPUs)
	}
}

// TestSpread: under Options.Spread a job goes to the instance holding the
// fewest jobs even where the predicted gain is higher in a fuller one:
// next to one running job on a whole GPU a new "slow" job gains 0.9 - 0.1
// = 0.8, alone on a 1g slice (14 of 98 SMs) 0.14.
func TestSpread(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"slow": 98}, interference: 0.1}
	running := Placed{Job: Job{ID: "r", Type: "slow", MemoryMiB: 1000}, Instance: 0, Percent: 100}
	for _, tc := range []struct {
		spread  bool
		wantGPU int
	}{{false, 0}, {true, 1}} {
		t.Run(fmt.Sprintf("spread=%v", tc.spread), func(t *testing.T) {
			gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{running}}, {Layout: layout(t, m, "1g.10gb")}}
			opt := Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, Spread: tc.spread}
			plan, err := Decide(Request{GPUs: gpus, Pending: []Job{{ID: "n", Type: "slow", MemoryMiB: 1000}}}, est, opt)
			if err != nil {
				t.Fatal(err)
			}
			got := -1
			for g, gp := range plan.GPUs {
				if slices.ContainsFunc(gp.Jobs, func(p Placed) bool { return p.Job.ID == "n" }) {
					got = g
				}
			}
			if got != tc.wantGPU {
				t.Errorf("new job on GPU %d, want %d (plan %+v)", got, tc.wantGPU, plan.GPUs)
			}
		})
	}
}

// TestDecideErrors: bad requests and estimator failures are errors that
// say what is wrong, never panics.
func TestDecideErrors(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"j": 98}}
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"no model", Request{GPUs: []GPUPlan{{}}}, "gpu 0: layout has no model"},
		{"bad instance", Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{{Job: Job{ID: "a", Type: "j"}, Instance: 3}}}}}, "job a is in instance 3"},
		{"unknown type", Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: []Job{{ID: "q", Type: "nope"}}}, "estimate q (nope)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decide(tc.req, est, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPriorityShares: where MPS client priority protects online jobs,
// shares may sum above 100 %: every new job gets 100 %, only memory makes
// a job wait, and neither an arrival nor a completion changes a running
// job's share (no restart), even one placed at another share.
func TestPriorityShares(t *testing.T) {
	m := a100(t)
	// On the whole A100 (98 SMs): "fast" reaches speed 1 at 20 % (demand
	// 20), "slow" needs 100 %.
	est := &curveEstimator{saturate: map[string]float64{"fast": 19.6, "slow": 98}, interference: 0.1}
	opt := Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true}
	pending := []Job{
		{ID: "on", Type: "fast", Online: true, MemoryMiB: 10_000},
		{ID: "a", Type: "slow", MemoryMiB: 20_000},
		{ID: "b", Type: "slow", MemoryMiB: 20_000},
		{ID: "c", Type: "fast", MemoryMiB: 10_000},   // placed last (largest memory first): 90 GB in all
		{ID: "big", Type: "slow", MemoryMiB: 30_000}, // is one job too many for 80
	}
	plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: pending}, est, opt)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	sum := 0
	for _, p := range plan.GPUs[0].Jobs {
		got[p.Job.ID] = p.Percent
		sum += p.Percent
	}
	want := map[string]int{"on": 100, "a": 100, "b": 100, "big": 100}
	for id, pct := range want {
		if got[id] != pct {
			t.Errorf("%s at %d %%, want %d (all: %v)", id, got[id], pct, got)
		}
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].ID != "c" {
		t.Errorf("waiting %v, want only c (memory)", plan.Waiting)
	}
	if sum <= 100 {
		t.Errorf("shares sum to %d %%, want above 100", sum)
	}
	// One offline job ends: no running job restarts, and c takes the
	// freed memory.
	var running []Placed
	for _, p := range plan.GPUs[0].Jobs {
		if p.Job.ID == "b" {
			p.Percent = 40 // placed so by an earlier rule: kept
		}
		if p.Job.ID != "a" {
			running = append(running, p)
		}
	}
	next, err := Decide(Request{GPUs: []GPUPlan{{Layout: plan.GPUs[0].Layout, Jobs: running}}, Pending: plan.Waiting}, est, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Changes) != 1 || len(next.Changes[0].Restart) != 0 || !slices.Equal(next.Changes[0].Start, []string{"c"}) {
		t.Errorf("changes %+v, want c started and no restart", next.Changes)
	}
	for _, p := range next.GPUs[0].Jobs {
		if w := map[string]int{"on": 100, "b": 40, "big": 100, "c": 100}[p.Job.ID]; p.Percent != w {
			t.Errorf("after a ended: %s at %d %%, want %d", p.Job.ID, p.Percent, w)
		}
	}
	// Without PriorityShares the same jobs cannot all share: 100 % is
	// spent and jobs wait for share, not memory.
	opt.PriorityShares = false
	plain, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb")}}, Pending: pending[:4]}, est, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Waiting) == 0 {
		t.Errorf("without priority shares nothing waits: %+v", plain.GPUs[0].Jobs)
	}
}
