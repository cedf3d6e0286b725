package predictor

import (
	"slices"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestPlacements: an instance with two or more jobs becomes a whole-GPU
// run at the nearest alone percentage and mmkd's priorities; a job alone
// in its instance is not a co-located group; groups are counted.
func TestPlacements(t *testing.T) {
	m, err := partitioner.LookupModel("H100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partitioner.ParseLayout(m, "3g.40gb@0+3g.40gb@4")
	if err != nil {
		t.Fatal(err)
	}
	job := func(typ string) partitioner.Job {
		return partitioner.Job{ID: typ, Type: typ, Online: KindOf(typ) == Online}
	}
	plan := &partitioner.Plan{GPUs: []partitioner.GPUPlan{{Layout: layout, Jobs: []partitioner.Placed{
		{Job: job("resnet50_infer"), Instance: 0, Percent: 100},
		{Job: job("vgg19_train"), Instance: 0, Percent: 50},
		{Job: job("bert_train"), Instance: 1, Percent: 100},
	}}}}
	p := NewPlacements([]int{100, 10, 20, 30, 50, 70})
	p.Add(plan)
	p.Add(plan)
	runs, counts := p.Top(0)
	// 3g.40gb has 60 of the H100's 132 SMs: 100 % of it is 45 % of the
	// GPU (nearest: 50), 50 % of it 23 % (nearest: 20).
	if len(runs) != 1 || runs[0].Key() != "resnet50_infer@50+vgg19_train@20/p1" || !slices.Equal(counts, []int{2}) {
		t.Fatalf("groups %v, counts %v", runs, counts)
	}
	if r, _ := p.Top(1); len(r) != 1 {
		t.Fatalf("Top(1): %v", r)
	}
}

// TestNearestPercent: the closest percentage, the lower on a tie, in any
// order; none of none.
func TestNearestPercent(t *testing.T) {
	for _, tc := range []struct {
		ps        []int
		pct, want int
		ok        bool
	}{
		{[]int{10, 20, 30, 50}, 40, 30, true},
		{[]int{50, 30, 20, 10}, 40, 30, true},
		{[]int{10, 50, 100}, 75, 50, true},
		{[]int{100, 10}, 5, 10, true},
		{[]int{70}, 30, 70, true},
		{nil, 30, 0, false},
	} {
		got, ok := nearestPercent(slices.Values(tc.ps), tc.pct)
		if got != tc.want || ok != tc.ok {
			t.Errorf("nearest of %v to %d: %d, %v; want %d, %v", tc.ps, tc.pct, got, ok, tc.want, tc.ok)
		}
	}
}
