package predictor

import (
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestEstimator: relative speeds fall with a smaller slice, a smaller
// share and a co-runner; below the smallest profiled share they scale
// with the SMs; unknown types are errors that name them.
func TestEstimator(t *testing.T) {
	samples, m := smallForest(t)
	est := Estimator{Model: m, Profiles: Profiles(samples)}
	job := partitioner.Job{Type: "bert_train"}
	speed := func(sms, pct int, co []partitioner.Share) float64 {
		t.Helper()
		s, err := est.Speed(job, sms, 132, pct, co)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole, slice, share := speed(132, 100, nil), speed(60, 100, nil), speed(132, 40, nil)
	crowded := speed(132, 100, []partitioner.Share{{Job: partitioner.Job{Type: "vgg19_train"}, Percent: 100}})
	if !(slice < whole && share < whole && crowded < whole) {
		t.Errorf("whole %.3f, 60 SMs %.3f, 40 %% %.3f, crowded %.3f: want the last three below the first", whole, slice, share, crowded)
	}
	lo := Profiles(samples)["bert_train"].lowest()
	if lo < 2 {
		t.Skipf("lowest profiled share %d %%: nothing below it to test", lo)
	}
	at, half := speed(132, lo, nil), speed(66, lo, nil)
	if d := half - at/2; d > 1e-9 || d < -1e-9 {
		t.Errorf("below the lowest share: %.4f, want half of %.4f", half, at)
	}
	if _, err := est.Speed(partitioner.Job{Type: "gpt"}, 132, 132, 100, nil); err == nil || !strings.Contains(err.Error(), `"gpt"`) {
		t.Errorf("unknown type: error %v", err)
	}
}

func partitionerJob(typ string, online bool) partitioner.Job {
	return partitioner.Job{ID: typ, Type: typ, Online: online}
}

func shares(j partitioner.Job, pct int) []partitioner.Share {
	return []partitioner.Share{{Job: j, Percent: pct}}
}
