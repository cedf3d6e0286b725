package partitioner

import (
	"errors"
	"strings"
	"testing"
)

// orderEstimator answers from the co-runners' order, so a cache that
// passed them unsorted or mixed up keys would be caught.
type orderEstimator struct{ calls int }

func (e *orderEstimator) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	e.calls++
	if j.Type == "bad" {
		return 0, errors.New("unknown type")
	}
	s := float64(sms*percent) / float64(gpuSMs*100)
	for k, c := range co {
		if k > 0 && co[k-1].Job.Type > c.Job.Type {
			return 0, errors.New("co-runners not sorted by type")
		}
		s -= 0.01 * float64(k+1) * float64(c.Percent) / 100
	}
	return s, nil
}

func TestCache(t *testing.T) {
	a := Job{ID: "a", Type: "ta"}
	b := Job{ID: "b", Type: "tb"}
	c := Job{ID: "c", Type: "tc"}
	tests := []struct {
		name    string
		job     Job
		percent int
		co      []Share
	}{
		{"alone", a, 50, nil},
		{"alone off step", a, 55, nil},
		{"two co-runners", a, 40, []Share{{b, 30}, {c, 30}}},
		{"two co-runners reversed", a, 40, []Share{{c, 30}, {b, 30}}},
		{"same types other shares", a, 40, []Share{{b, 20}, {c, 40}}},
	}
	est := &orderEstimator{}
	cache := NewCache(est)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sorted := append([]Share(nil), tc.co...)
			if len(sorted) == 2 && sorted[0].Job.Type > sorted[1].Job.Type {
				sorted[0], sorted[1] = sorted[1], sorted[0]
			}
			want, err := (&orderEstimator{}).Speed(tc.job, 42, 98, tc.percent, sorted)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := cache.Speed(tc.job, 42, 98, tc.percent, tc.co)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("Speed = %v, want %v", got, want)
				}
			}
		})
	}
	// The alone curve is asked once (10 percentages); each distinct
	// co-runner set once; off-step percentages every time.
	if want := 10 + 2 + 2; est.calls != want {
		t.Errorf("estimator called %d times, want %d", est.calls, want)
	}
	if NewCache(cache) != cache {
		t.Error("NewCache wrapped a Cache again")
	}
	_, err := cache.Speed(Job{ID: "x", Type: "bad"}, 42, 98, 50, nil)
	if err == nil || !strings.Contains(err.Error(), "x (bad)") {
		t.Errorf("error %v does not name the job", err)
	}
}

func TestLayoutsForOnePerMultiset(t *testing.T) {
	m := a100(t)
	profiles, err := m.SelectProfiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, l := range m.MaximalLayouts(profiles) {
		want[profileMultiset(l)] = true
	}
	got := map[string]bool{}
	for _, l := range layoutsFor(m, profiles) {
		k := profileMultiset(l)
		if got[k] {
			t.Errorf("profiles %s tried twice", k)
		}
		got[k] = true
	}
	if len(got) != len(want) {
		t.Errorf("%d multisets tried, want %d", len(got), len(want))
	}
}
