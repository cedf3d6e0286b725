package jobsim

import (
	"math"
	"strings"
	"testing"
)

// TestRunSpeeds: a job alone runs at its alone speed; one that shares
// half its window runs at the mean of alone and shared; time slicing and
// MPS differ; bad windows and types are named.
func TestRunSpeeds(t *testing.T) {
	m := builtinJobModels(t).Truth
	a, b := "resnet50_train", "vgg19_train"
	shared := func(slicing bool) float64 {
		on := []CoShare{{Job: a, Pct: 100}, {Job: b, Pct: 100}}
		return m.sharedGPU(slicing, 100, on, 0)
	}
	for _, tc := range []struct {
		name    string
		slicing bool
		jobs    []RunJob
		want    float64
	}{
		{"alone", false, []RunJob{{Type: a, Start: 0, End: 10}}, m.Alone(a, 100)},
		{"alone, sliced", true, []RunJob{{Type: a, Start: 0, End: 10}}, m.Alone(a, 100)},
		{"half shared, MPS", false, []RunJob{{Type: a, Start: 0, End: 10}, {Type: b, Start: 5, End: 20}}, (m.Alone(a, 100) + shared(false)) / 2},
		{"half shared, sliced", true, []RunJob{{Type: a, Start: 0, End: 10}, {Type: b, Start: 5, End: 20}}, (m.Alone(a, 100) + shared(true)) / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.RunSpeeds(tc.slicing, tc.jobs)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got[0]-tc.want) > 1e-12 {
				t.Errorf("speed %.6f, want %.6f", got[0], tc.want)
			}
		})
	}
	if shared(true) == shared(false) || !(shared(false) < m.Alone(a, 100)) {
		t.Errorf("shared speeds %.4f (sliced) and %.4f (MPS), alone %.4f: want them apart and below alone", shared(true), shared(false), m.Alone(a, 100))
	}
	for _, tc := range []struct {
		jobs []RunJob
		want string
	}{
		{[]RunJob{{Type: "gpt5", Start: 0, End: 1}}, `unknown type "gpt5"`},
		{[]RunJob{{Type: a, Start: 3, End: 3}}, "window 3..3 s"},
	} {
		if _, err := m.RunSpeeds(false, tc.jobs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}
