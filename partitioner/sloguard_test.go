package partitioner

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// shareEstimator is curveEstimator with co-runners that weigh by their
// share: each multiplies a job's speed by 1 - interference x its
// percent / 100.
type shareEstimator struct {
	saturate     map[string]float64
	interference float64
}

func (e *shareEstimator) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	sat, ok := e.saturate[j.Type]
	if !ok {
		return 0, fmt.Errorf("no curve for %s", j.Type)
	}
	s := math.Min(1, float64(sms)*float64(percent)/100/sat)
	for _, c := range co {
		s *= 1 - e.interference*float64(c.Percent)/100
	}
	return s, nil
}

// placedOn reports the GPU a plan placed job id on, -1 if none.
func placedOn(plan *Plan, id string) int {
	for g, gp := range plan.GPUs {
		for _, p := range gp.Jobs {
			if p.Job.ID == id {
				return g
			}
		}
	}
	return -1
}

// TestSLOGuardCountsCoRunners: the guard keeps every service of the
// instance at its need, next to its co-runners: services count at their
// share times their load (light services share, busy ones do not), and
// offline jobs count only without priority shares.
func TestSLOGuardCountsCoRunners(t *testing.T) {
	m := a100(t)
	est := &shareEstimator{saturate: map[string]float64{"svc": 98, "off": 98}, interference: 0.3}
	running := func(load float64) Placed {
		return Placed{Job: Job{ID: "a", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.9, Load: load}, Instance: 0, Percent: 100, Speed: 1}
	}
	for _, tc := range []struct {
		name   string
		load   float64 // both services'
		next   Job
		prio   bool
		placed bool
	}{
		{"light service beside a light one", 0.1, Job{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.9, Load: 0.1}, true, true},
		{"busy service beside a busy one", 0.5, Job{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.9, Load: 0.5}, true, false},
		{"service of unknown load", 0.1, Job{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.5}, true, false},
		{"offline job under priority", 0.1, Job{ID: "b", Type: "off", MemoryMiB: 1000}, true, true},
		{"offline job without priority", 0.1, Job{ID: "b", Type: "off", MemoryMiB: 1000}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := running(tc.load)
			if !tc.prio {
				// Without priority shares MPSConfig shares what the
				// service leaves: at 50 % it needs 0.45 and has 0.5
				// alone, 0.425 beside a job at the other 50 %.
				a.Percent, a.Job.MinSpeed = 50, 0.45
			}
			gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{a}}}
			opt := Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: tc.prio, SLOGuard: true}
			plan, err := Decide(Request{GPUs: gpus, Pending: []Job{tc.next}}, est, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := placedOn(plan, "b") == 0; got != tc.placed {
				t.Errorf("placed %v, want %v (waiting %v)", got, tc.placed, plan.Waiting)
			}
			opt.SLOGuard = false
			if plan, err := Decide(Request{GPUs: gpus, Pending: []Job{tc.next}}, est, opt); err != nil || placedOn(plan, "b") != 0 {
				t.Errorf("without the guard: placed on %d (%v), want 0", placedOn(plan, "b"), err)
			}
		})
	}
}

// TestSpreadByBusyShare: under Spread a job goes to the least busy
// instance, two light services counting less than one trainer for an
// offline job, and the trainer not at all for a service above it.
func TestSpreadByBusyShare(t *testing.T) {
	m := a100(t)
	est := &shareEstimator{saturate: map[string]float64{"svc": 98, "off": 98}, interference: 0.1}
	svc := func(id string) Placed {
		return Placed{Job: Job{ID: id, Type: "svc", Online: true, MemoryMiB: 1000, Load: 0.1}, Instance: 0, Percent: 100, Speed: 1}
	}
	gpus := []GPUPlan{
		{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{svc("s1"), svc("s2")}},
		{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{{Job: Job{ID: "t", Type: "off", MemoryMiB: 1000}, Instance: 0, Percent: 100, Speed: 1}}},
	}
	plan, err := Decide(Request{GPUs: gpus, Pending: []Job{{ID: "new", Type: "off", MemoryMiB: 1000}}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, Spread: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := placedOn(plan, "new"); g != 0 {
		t.Errorf("placed on GPU %d, want 0 (two services at load 0.1 against a trainer)", g)
	}
	// A service under priority shares does not count the trainer, which
	// runs below it: it goes beside the trainer, away from the services.
	plan, err = Decide(Request{GPUs: gpus, Pending: []Job{{ID: "new", Type: "svc", Online: true, MemoryMiB: 1000, Load: 0.1}}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, Spread: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := placedOn(plan, "new"); g != 1 {
		t.Errorf("service placed on GPU %d, want 1 (beside the trainer at lower priority)", g)
	}
}

// recordingEstimator is shareEstimator that records the co-runner
// shares it was asked about; loadAware says it counts load itself.
type recordingEstimator struct {
	shareEstimator
	asked []int
}

func (e *recordingEstimator) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	for _, c := range co {
		e.asked = append(e.asked, c.Percent)
	}
	return e.shareEstimator.Speed(j, sms, gpuSMs, percent, co)
}

type loadAware struct{ *recordingEstimator }

func (loadAware) KnowsLoad() bool { return true }

// TestSLOGuardLoadAware: the guard asks about a service co-runner at its
// share times its load, unless the estimator counts load itself.
func TestSLOGuardLoadAware(t *testing.T) {
	m := a100(t)
	for _, aware := range []bool{false, true} {
		rec := &recordingEstimator{shareEstimator: shareEstimator{saturate: map[string]float64{"svc": 98}, interference: 0.01}}
		var est Estimator = rec
		if aware {
			est = loadAware{rec}
		}
		a := Placed{Job: Job{ID: "a", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.5, Load: 0.1}, Instance: 0, Percent: 100, Speed: 1}
		gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{a}}}
		b := Job{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.5, Load: 0.1}
		if _, err := Decide(Request{GPUs: gpus, Pending: []Job{b}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, SLOGuard: true}); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(rec.asked, 10) == aware {
			t.Errorf("load aware %v: asked about co-runners at %v: want 10 %% only when not aware", aware, rec.asked)
		}
	}
}

// TestSLOGuardBelowNeedAlready: a service already below its need (its
// need rose after it was placed) closes its instance only to jobs that
// slow it further: an offline job under priority joins, a service does
// not.
func TestSLOGuardBelowNeedAlready(t *testing.T) {
	m := a100(t)
	est := &shareEstimator{saturate: map[string]float64{"svc": 196, "off": 98}, interference: 0.3}
	a := Placed{Job: Job{ID: "a", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.9, Load: 0.5}, Instance: 0, Percent: 100, Speed: 0.5}
	for _, tc := range []struct {
		next   Job
		placed bool
	}{
		{Job{ID: "b", Type: "off", MemoryMiB: 1000}, true},
		{Job{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, Load: 0.5}, false},
	} {
		gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{a}}}
		plan, err := Decide(Request{GPUs: gpus, Pending: []Job{tc.next}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, SLOGuard: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := placedOn(plan, "b") == 0; got != tc.placed {
			t.Errorf("%s (online %v): placed %v, want %v", tc.next.ID, tc.next.Online, got, tc.placed)
		}
	}
}

// TestSLOGuardTriesEachNeed: two waiting services of one type and memory
// but different needs: the first does not fit, the second is still
// tried and placed.
func TestSLOGuardTriesEachNeed(t *testing.T) {
	m := a100(t)
	est := &shareEstimator{saturate: map[string]float64{"svc": 98}, interference: 0.3}
	a := Placed{Job: Job{ID: "a", Type: "svc", Online: true, MemoryMiB: 1000, Load: 0.5}, Instance: 0, Percent: 100, Speed: 1}
	gpus := []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{a}}}
	pending := []Job{
		{ID: "b", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.95, Load: 0.5},
		{ID: "c", Type: "svc", Online: true, MemoryMiB: 1000, MinSpeed: 0.5, Load: 0.5},
	}
	plan, err := Decide(Request{GPUs: gpus, Pending: pending}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, SLOGuard: true, ArrivalOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	if placedOn(plan, "b") >= 0 || placedOn(plan, "c") != 0 {
		t.Errorf("b on %d, c on %d: want b waiting, c placed", placedOn(plan, "b"), placedOn(plan, "c"))
	}
}

// TestSpreadTriesEveryBusyInstance: under priority shares a service does
// not count the trainers below it, yet two instances of one profile that
// hold trainers are not alike: the one with the memory for it is tried.
func TestSpreadTriesEveryBusyInstance(t *testing.T) {
	m := a100(t)
	est := &shareEstimator{saturate: map[string]float64{"svc": 98, "off": 98}, interference: 0.1}
	gpus := []GPUPlan{{Layout: layout(t, m, "3g.40gb@0+3g.40gb@4"), Jobs: []Placed{
		{Job: Job{ID: "big", Type: "off", MemoryMiB: 40000}, Instance: 0, Percent: 100, Speed: 1},
		{Job: Job{ID: "small", Type: "off", MemoryMiB: 1000}, Instance: 1, Percent: 100, Speed: 1},
	}}}
	plan, err := Decide(Request{GPUs: gpus, Pending: []Job{{ID: "svc", Type: "svc", Online: true, MemoryMiB: 1000, Load: 0.1}}}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, Spread: true})
	if err != nil {
		t.Fatal(err)
	}
	if placedOn(plan, "svc") != 0 {
		t.Errorf("service waits (%v), want it in the second 3g instance", plan.Waiting)
	}
}
