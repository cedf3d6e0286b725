package partitioner

import (
	"slices"
	"testing"
)

// TestPinnedPlacement: a pinned job goes into its instance or waits,
// whatever another instance or GPU would give it, and a job like it but
// unpinned still finds its best place.
func TestPinnedPlacement(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"j": 98}, interference: 0.5}
	two := func() []GPUPlan {
		return []GPUPlan{{Layout: layout(t, m, "4g.40gb@0+3g.40gb@4")}, {Layout: layout(t, m, "7g.80gb")}}
	}
	for _, tc := range []struct {
		name    string
		pending []Job
		want    map[string][2]int // job -> GPU, instance
		waiting []string
	}{
		{"unpinned takes the largest instance", []Job{{ID: "a", Type: "j", MemoryMiB: 1000}},
			map[string][2]int{"a": {1, 0}}, nil},
		{"pinned to the 3g", []Job{{ID: "a", Type: "j", MemoryMiB: 1000, Pin: &Pin{GPU: 0, Instance: 1}}},
			map[string][2]int{"a": {0, 1}}, nil},
		{"pinned to a full instance waits", []Job{{ID: "a", Type: "j", MemoryMiB: 50_000, Pin: &Pin{GPU: 0, Instance: 1}}},
			map[string][2]int{}, []string{"a"}},
		{"a pinned failure does not hold back a like unpinned job", []Job{
			{ID: "a", Type: "j", MemoryMiB: 50_000, Pin: &Pin{GPU: 0, Instance: 1}},
			{ID: "b", Type: "j", MemoryMiB: 50_000}},
			map[string][2]int{"b": {1, 0}}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Decide(Request{GPUs: two(), Pending: tc.pending}, est, Options{FixedMIG: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][2]int{}
			for g, gp := range plan.GPUs {
				for _, p := range gp.Jobs {
					got[p.Job.ID] = [2]int{g, p.Instance}
				}
			}
			for id, at := range tc.want {
				if got[id] != at {
					t.Errorf("job %s at GPU/instance %v, want %v", id, got[id], at)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("placed %v, want %v", got, tc.want)
			}
			var waiting []string
			for _, j := range plan.Waiting {
				waiting = append(waiting, j.ID)
			}
			if !slices.Equal(waiting, tc.waiting) {
				t.Errorf("waiting %v, want %v", waiting, tc.waiting)
			}
		})
	}
}

// TestPinnedKeepsLayoutAndShare: a GPU holding a pinned job, or one a
// pending job is pinned to, keeps its layout where the search would
// change it (TestNoMIGChangeUnderOnline's case), and a running pinned job
// keeps its percentage where MPSConfig would re-share it (no restart:
// mmk does not run its process).
func TestPinnedKeepsLayoutAndShare(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"small": 14, "big": 98}, interference: 0.5}
	newJobs := []Job{{ID: "b", Type: "small", MemoryMiB: 1000}, {ID: "c", Type: "small", MemoryMiB: 1000}}
	running := Placed{Job: Job{ID: "a", Type: "small", MemoryMiB: 1000}, Instance: 0, Percent: 20, Speed: 1}
	for _, tc := range []struct {
		name    string
		running Placed
		pending []Job
		change  bool
	}{
		{"unpinned: the layout changes", running, newJobs, true},
		{"pinned running job", pinned(running), newJobs, false},
		{"pending job pinned to the GPU", running, append(slices.Clone(newJobs), Job{ID: "p", Type: "small", MemoryMiB: 1000, Pin: &Pin{}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{tc.running}}}, Pending: tc.pending}
			plan, err := Decide(req, est, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if changed := !plan.GPUs[0].Layout.Equal(req.GPUs[0].Layout); changed != tc.change {
				t.Fatalf("layout %s: changed %v, want %v", plan.GPUs[0].Layout, changed, tc.change)
			}
			if tc.change {
				return
			}
			for _, p := range plan.GPUs[0].Jobs {
				if p.Job.ID == "a" && p.Job.Pin != nil && p.Percent != 20 {
					t.Errorf("pinned job re-shared to %d %%", p.Percent)
				}
			}
			for _, ch := range plan.Changes {
				if tc.running.Job.Pin != nil && slices.Contains(ch.Restart, "a") {
					t.Errorf("pinned job restarted: %+v", ch)
				}
			}
		})
	}
}

func pinned(p Placed) Placed {
	p.Job.Pin = &Pin{GPU: 0, Instance: p.Instance}
	return p
}

// TestPinnedShareKept: alone in its instance, an offline job at 20 % that
// would run faster at 100 % is re-shared (a restart); pinned, it keeps
// its 20 %.
func TestPinnedShareKept(t *testing.T) {
	m := a100(t)
	est := &curveEstimator{saturate: map[string]float64{"big": 98}}
	for _, pin := range []bool{false, true} {
		p := Placed{Job: Job{ID: "a", Type: "big", MemoryMiB: 1000}, Instance: 0, Percent: 20, Speed: 0.2}
		if pin {
			p = pinned(p)
		}
		plan, err := Decide(Request{GPUs: []GPUPlan{{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{p}}}}, est, Options{FixedMIG: true})
		if err != nil {
			t.Fatal(err)
		}
		restarted := len(plan.Changes) == 1 && slices.Contains(plan.Changes[0].Restart, "a")
		if restarted == pin || plan.GPUs[0].Jobs[0].Percent == 20 != pin {
			t.Errorf("pinned %v: at %d %%, restarted %v", pin, plan.GPUs[0].Jobs[0].Percent, restarted)
		}
	}
}
