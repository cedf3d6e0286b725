package slo

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The queue model (the controller's forecast, and the scenario suite's
// plant: sim/slosuite). The benchmark's service serves one request at a
// time, first come first served, and a request's latency is its wait in
// the queue and its service time; on the recorded rounds every late
// request was late through its wait (no service time passed 25 ms in
// round 40). TestQueueModelMatchesGPU checks the model against the GPU's
// rounds.

// queueRecordings are the recordings with service times and arrivals
// (bench/gpu/slo_recording.py since the queue model).
var queueRecordings = []string{
	"testdata/b32-phases-h100-25ms-r12.json", "testdata/b32-phases-h100-25ms-r13.json",
	"testdata/b32-phases-h100-25ms-r14.json", "testdata/b32-phases-h100-25ms-r15.json",
	"testdata/b32-phases-h100-25ms-r18.json", "testdata/b32-phases-h100-25ms-r19.json",
	"testdata/b32-phases-h100-25ms-r20.json", "testdata/b32-phases-h100-25ms-r21.json",
	"testdata/b32-phases-h100-25ms-r22.json", "testdata/b32-phases-h100-25ms-r23.json",
	"testdata/b32-phases-h100-25ms-r35.json", "testdata/b32-phases-h100-25ms-r36.json",
	"testdata/b32-phases-h100-25ms-r38-stalls.json", "testdata/b32-phases-h100-25ms-r39-stalls.json",
	"testdata/b32-phases-h100-25ms-r40.json",
	"testdata/b32-phases-h100-25ms-r42.json", "testdata/b32-phases-h100-25ms-r43.json",
	"testdata/b32-phases-h100-25ms-r44.json", "testdata/b32-phases-h100-25ms-r45.json",
	"testdata/b32-phases-h100-25ms-r46.json", "testdata/b32-phases-h100-25ms-r47.json",
}

// TestQueueModelMatchesGPU checks the queue model against the GPU: for
// every window of 50 requests or more of the recorded H100 rounds (every
// setting, the controller's and the service alone included, each phase),
// the recorded arrivals are served first come first served with service
// times drawn again (with replacement) from the window's own, 200 times.
// The share in time that the GPU measured lies within the middle 95 % of
// the model's in 430 of the 447 windows (at least 95 % asked), and the
// model's median is 0.19 points from the GPU's on average (at most 0.3
// asked). The fifteen rounds the model was built on (12-40): 331 of 337.
// The six run after it (42-47, with arrivals shared by the settings):
// 99 of 110. Of those eleven outside, five hold the first request of a
// phase that the benchmark's serving loop started up to 24 ms late under
// every setting in rounds 42 and 43 (slo_worker.py slept through the
// phase's command; fixed before round 44); the other six, like five of
// the six outside before, are below the model, where slow requests came
// in runs (two late at the same instant), which draws made one by one do
// not repeat.
func TestQueueModelMatchesGPU(t *testing.T) {
	const draws = 200
	bound := 25 * time.Millisecond
	windows, inside := 0, 0
	var absErr float64
	for _, f := range queueRecordings {
		rec := loadRecording(t, f)
		rng := rand.New(rand.NewPCG(1, 2))
		for _, setting := range slices.Sorted(maps.Keys(rec.Arrivals)) {
			for _, phase := range slices.Sorted(maps.Keys(rec.Arrivals[setting])) {
				arr := rec.Arrivals[setting][phase]
				if setting == "together" && phase == "low-again" {
					continue // the same window as low
				}
				lat, svc := rec.Latency[setting][phase], rec.Service[setting][phase]
				if len(arr) < 50 {
					continue
				}
				if len(lat) != len(arr) || len(svc) != len(arr) {
					t.Fatalf("%s %s %s: %d arrivals, %d latencies, %d service times", f, setting, phase, len(arr), len(lat), len(svc))
				}
				gpu := shareWithin(lat, bound)
				model := make([]float64, draws)
				for d := range model {
					var free float64
					inTime := 0
					for _, a := range arr {
						free = max(free, a*1e3) + svc[rng.IntN(len(svc))]
						if time.Duration((free-a*1e3)*float64(time.Millisecond)) <= bound {
							inTime++
						}
					}
					model[d] = float64(inTime) / float64(len(arr))
				}
				slices.Sort(model)
				lo, med, hi := model[draws*25/1000], model[draws/2], model[draws*975/1000-1]
				windows++
				if lo <= gpu && gpu <= hi {
					inside++
				} else {
					t.Logf("%s %s %s: %.4f in time on the GPU, model %.4f [%.4f, %.4f]", f, setting, phase, gpu, med, lo, hi)
				}
				absErr += math.Abs(gpu - med)
			}
		}
	}
	mae := absErr / float64(windows) * 100
	t.Logf("%d of %d windows inside the model's middle 95 %%; its median %.2f points from the GPU's on average", inside, windows, mae)
	if float64(inside) < 0.95*float64(windows) || mae > 0.3 {
		t.Errorf("the queue model misses the GPU: %d of %d windows inside its middle 95 %% (at least 95 %% asked), %.2f points off on average (at most 0.3)", inside, windows, mae)
	}
}

// shareWithin is the share of latencies (ms) within bound.
func shareWithin(lat []float64, bound time.Duration) float64 {
	in := 0
	for _, l := range lat {
		if time.Duration(l*float64(time.Millisecond)) <= bound {
			in++
		}
	}
	return float64(in) / float64(len(lat))
}
