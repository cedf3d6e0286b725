package partitioner

import (
	"errors"
	"slices"
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

// TestLayoutsFor: the search tries one layout per multiset of profiles,
// none it tries dominates another, and every maximal layout is tried or
// dominated by one that is.
func TestLayoutsFor(t *testing.T) {
	for _, name := range []string{"A100-80GB", "H200-141GB"} {
		t.Run(name, func(t *testing.T) {
			m, err := LookupModel(name)
			if err != nil {
				t.Fatal(err)
			}
			profiles, err := m.SelectProfiles(nil)
			if err != nil {
				t.Fatal(err)
			}
			tried := layoutsFor(m, profiles)
			seen := map[string]bool{}
			for _, a := range tried {
				k := a.Profiles()
				if seen[k] {
					t.Errorf("profiles %s tried twice", k)
				}
				seen[k] = true
				for _, b := range tried {
					if b.Profiles() != k && dominates(b, a) {
						t.Errorf("%s is tried, but %s dominates it", a, b)
					}
				}
			}
			for _, l := range m.MaximalLayouts(profiles) {
				if !seen[l.Profiles()] && !slices.ContainsFunc(tried, func(b Layout) bool { return dominates(b, l) }) {
					t.Errorf("maximal layout %s is neither tried nor dominated", l)
				}
			}
			// [4g,3g] and [3g,2g,2g] (MMK observation 1) stay candidates.
			for _, want := range []string{"4g,3g", "3g,2g,2g"} {
				found := slices.ContainsFunc(tried, func(l Layout) bool { return profilesIn(l) == want })
				if !found {
					t.Errorf("%s not tried", want)
				}
			}
		})
	}
}

func TestDominates(t *testing.T) {
	m := a100(t)
	tests := []struct {
		b, a string
		want bool
	}{
		{"4g.40gb@0+3g.40gb@4", "3g.40gb@0+3g.40gb@4", true},
		{"3g.40gb@0+3g.40gb@4", "4g.40gb@0+3g.40gb@4", false},
		{"7g.80gb", "3g.40gb@0+3g.40gb@4", false}, // fewer instances
		{"3g.40gb@0+1g.20gb@4+1g.20gb@6", "3g.40gb@0+1g.20gb@4+1g.10gb@6", true},
		{"3g.40gb@0+1g.20gb@4+1g.10gb@6", "3g.40gb@0+1g.20gb@4+1g.20gb@6", false},
	}
	for _, tc := range tests {
		if got := dominates(layout(t, m, tc.b), layout(t, m, tc.a)); got != tc.want {
			t.Errorf("dominates(%s, %s) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestDemand(t *testing.T) {
	tests := []struct {
		name  string
		speed func(int) float64
		want  int
	}{
		{"linear", func(p int) float64 { return float64(p) }, 100},
		{"saturates at 40", func(p int) float64 { return min(float64(p), 40) }, 40},
		{"95 % at 60", func(p int) float64 { return min(float64(p)/60*0.95, 0.95) + float64(max(p-60, 0))/800 }, 60},
		{"flat", func(int) float64 { return 1 }, 10},
	}
	for _, tc := range tests {
		if got := Demand(tc.speed); got != tc.want {
			t.Errorf("%s: Demand = %d, want %d", tc.name, got, tc.want)
		}
	}
}
