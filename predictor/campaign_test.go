package predictor

import (
	"slices"
	"strings"
	"testing"
)

func TestRunKeyPriorities(t *testing.T) {
	tests := []struct {
		key  string
		want Run
		err  string
	}{
		{key: "a_infer@50", want: Run{{Job: "a_infer", Percent: 50}}},
		{key: "a_infer@100+b_train@40/p1", want: Run{{Job: "a_infer", Percent: 100}, {Job: "b_train", Percent: 40, Priority: 1}}},
		{key: "b_train@40/p2", err: `priority "2" is not 0 or 1`},
		{key: "b_train@40/px", err: `priority "x"`},
		{key: "b_train/p1", err: "is not JOB@PERCENT"},
	}
	for _, tt := range tests {
		got, err := ParseRunKey(tt.key)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.key, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) || got.Key() != tt.key {
			t.Errorf("%s: %v (key %s), %v; want %v", tt.key, got, got.Key(), err, tt.want)
		}
	}
	r := Run{{Job: "a_infer", Percent: 100}, {Job: "b_train", Percent: 40, Priority: 1}, {Job: "b_train", Percent: 40}}
	co, err := r.Without("b_train", 40, 1)
	if err != nil || !slices.Equal(co, Run{{Job: "a_infer", Percent: 100}, {Job: "b_train", Percent: 40}}) {
		t.Errorf("Without: %v, %v", co, err)
	}
	if _, err := r.Without("b_train", 50, 0); err == nil {
		t.Error("Without a member the run lacks: no error")
	}
}

// TestStepsInterleaved: every run once per repetition, the first
// repetition in the plan's order (alone runs first: the features), each
// later repetition wholly after the one before, in its own order.
func TestStepsInterleaved(t *testing.T) {
	var runs []Run
	for _, j := range []string{"a_infer", "b_train", "c_train", "d_infer", "e_train", "f_train"} {
		runs = append(runs, Run{{Job: j, Percent: 100}})
	}
	steps := Steps(runs, 3, 1)
	if len(steps) != 18 {
		t.Fatalf("%d steps, want 18", len(steps))
	}
	orders := make([][]string, 3)
	for i, s := range steps {
		if want := i / len(runs); s.Rep != want {
			t.Fatalf("step %d is repetition %d, want %d", i, s.Rep, want)
		}
		orders[s.Rep] = append(orders[s.Rep], s.Run.Key())
	}
	for rep, o := range orders {
		sorted := slices.Sorted(slices.Values(o))
		if !slices.Equal(sorted, slices.Sorted(slices.Values(orders[0]))) {
			t.Fatalf("repetition %d measures %v", rep, o)
		}
	}
	if !slices.Equal(orders[0], []string{"a_infer@100", "b_train@100", "c_train@100", "d_infer@100", "e_train@100", "f_train@100"}) {
		t.Errorf("first repetition %v: not the plan's order", orders[0])
	}
	if slices.Equal(orders[1], orders[0]) && slices.Equal(orders[2], orders[0]) {
		t.Error("later repetitions in the plan's order: drifts would fall on the same runs")
	}
	if steps[6].ID() != steps[6].Run.Key()+"#1" || steps[0].ID() != steps[0].Run.Key() {
		t.Errorf("IDs %s, %s", steps[0].ID(), steps[6].ID())
	}
}

// TestPlanPrioritiesAndPlacements: mixed priorities put half the drawn
// runs at mmkd's priorities (offline 1, online 0); placements come
// before the drawn runs and must use the campaign's jobs and alone
// percentages.
func TestPlanPrioritiesAndPlacements(t *testing.T) {
	jobs := []string{"a_infer", "b_train", "c_train", "d_infer"}
	placed := AsPlaced(Run{{Job: "a_infer", Percent: 100}, {Job: "b_train", Percent: 50}})
	runs, err := Plan(PlanSpec{Jobs: jobs, AlonePercents: []int{50, 100}, Pairs: 6, Triples: 4, Seed: 5, Priorities: PrioritiesMixed, Placements: []Run{placed}})
	if err != nil {
		t.Fatal(err)
	}
	if k := slices.IndexFunc(runs, func(r Run) bool { return len(r) > 1 }); runs[k].Key() != placed.Key() || placed.Key() != "a_infer@100+b_train@50/p1" {
		t.Fatalf("first co-located run %s, want the placement a_infer@100+b_train@50/p1", runs[k].Key())
	}
	low := 0
	for _, r := range runs[len(jobs)*2+1:] {
		if strings.Contains(r.Key(), "/p1") {
			low++
			if !slices.Equal(r, AsPlaced(r)) {
				t.Errorf("run %s: priorities not as mmkd places them", r.Key())
			}
		}
	}
	if low < 3 || low > 7 {
		t.Errorf("%d of 10 drawn runs with priority 1: want about half", low)
	}
	for _, tt := range []struct {
		spec PlanSpec
		want string
	}{
		{PlanSpec{Jobs: jobs, AlonePercents: []int{100}, Priorities: "some"}, `priorities "some"`},
		{PlanSpec{Jobs: jobs, AlonePercents: []int{100}, Placements: []Run{{{Job: "gpt_train", Percent: 100}}}}, "gpt_train is not one of"},
		{PlanSpec{Jobs: jobs, AlonePercents: []int{100}, Placements: []Run{{{Job: "a_infer", Percent: 30}}}}, "is not at an alone percentage"},
	} {
		if _, err := Plan(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// FuzzParseRunKey: a key that parses is valid and prints back to a key
// that parses to the same run.
func FuzzParseRunKey(f *testing.F) {
	for _, k := range []string{"a_infer@50", "a_infer@100+b_train@40/p1", "x@0", "b@40/p", "+", "a@1/p1/p1"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		r, err := ParseRunKey(key)
		if err != nil {
			return
		}
		for _, m := range r {
			if m.Job == "" || m.Percent < 1 || m.Percent > 100 || m.Priority < 0 || m.Priority > 1 {
				t.Fatalf("%q parsed to a bad member %+v", key, m)
			}
		}
		back, err := ParseRunKey(r.Key())
		if err != nil || back.Key() != r.Key() {
			t.Fatalf("%q -> %q does not parse back: %v", key, r.Key(), err)
		}
	})
}
