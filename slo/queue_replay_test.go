package slo

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The queue model of the replay. The benchmark's service serves one
// request at a time, first come first served, and a request's latency is
// its wait in the queue and its service time; on the recorded rounds every
// late request was late through its wait (no service time passed 25 ms in
// round 40). replayBench draws each latency whole from the phase's
// recorded latencies, so a burst of arrivals, or the queue a rise builds
// before the controller acts, never shows. queueRun draws Poisson
// arrivals, queues them, and gives each request, when it starts, a
// service time drawn from what the service showed under the setting of
// the rung in force then. TestQueueModelMatchesGPU checks the model
// against the GPU's rounds.

// queueOf is a recording's service times (ms) of a setting in a phase,
// sorted, for drawing by quantile.
type queueOf map[[2]string][]float64

// draw is the service time at quantile u of setting's in phase.
func (q queueOf) draw(t *testing.T, rec benchRecording, setting, phase string, u float64) time.Duration {
	k := [2]string{setting, phase}
	s, ok := q[k]
	if !ok {
		s = slices.Clone(rec.Service[setting][phase])
		if len(s) == 0 {
			t.Fatalf("the recording has no service times of %s in phase %s", setting, phase)
		}
		slices.Sort(s)
		q[k] = s
	}
	return time.Duration(s[min(int(u*float64(len(s))), len(s)-1)] * float64(time.Millisecond))
}

// queueResult is a replay through the queue model: per phase the share
// of requests in time and the trainers' mean speed, the controller's
// decisions, and when each late request arrived.
type queueResult struct {
	att, train []float64
	ds         []Decision
	lateAt     []time.Duration
}

// queueRun runs a controller over the recorded benchmark as
// replayBench does, through the queue model: each phase (phaseLen at its
// recorded rate) has its own Poisson arrivals and each request its own
// quantile of the service times, both from seed, so that a controller and
// a pinned setting replayed with one seed meet the same bursts and the
// same luck. A request starts when the one before it ends (at a tick,
// with the rung then in force; service times come from the phase in
// force); its latency counts towards the phase it arrived in, and the
// controller observes it when it ends.
func queueRun(t *testing.T, rec benchRecording, c *Controller, rungOf []string, bound, phaseLen time.Duration, seed uint64) (r queueResult) {
	t.Helper()
	const tick = 10 * time.Millisecond
	luck := rand.New(rand.NewPCG(seed, 7)) // one quantile per request
	mix := rand.New(rand.NewPCG(seed, 11)) // duty-cycled rungs' picks
	q := queueOf{}
	type arrival struct {
		at    time.Duration
		phase int
	}
	var queue []arrival
	// pending: the requests' latencies, which the service reports;
	// served: their service times, which the hook measures.
	var pending, served []req
	phases := []string{"low", "medium", "high", "low-again"}
	n, late := make([]int, len(phases)), make([]int, len(phases))
	free, now := time.Duration(0), time.Duration(0)
	step := func(phase string) {
		setting := rungOf[c.Level()]
		for len(queue) > 0 && max(free, queue[0].at) <= now {
			a := queue[0]
			queue = queue[1:]
			start := max(free, a.at)
			free = start + q.draw(t, rec, mixPick(setting, mix), phase, luck.Float64())
			lat := free - a.at
			pending = append(pending, req{free, lat})
			served = append(served, req{free, free - start})
			n[a.phase]++
			if lat > bound {
				late[a.phase]++
				r.lateAt = append(r.lateAt, a.at)
			}
		}
		served = deliver(c, served, now, Hook)
		pending = deliver(c, pending, now, Reported)
		if d, ok := c.Step(now); ok {
			r.ds = append(r.ds, d)
		}
	}
	for i, phase := range phases {
		rate := rec.Rates[phase]
		arrivals := rand.New(rand.NewPCG(seed, 13+uint64(i)))
		gap := func() time.Duration { return time.Duration(arrivals.ExpFloat64() / rate * float64(time.Second)) }
		end := now + phaseLen
		next := now + gap()
		speed, steps := 0.0, 0
		for ; now < end; now += tick {
			// The phase's arrivals up to the next tick (on its last, to
			// its end): each starts no earlier than it arrives.
			for ; next <= now; next += gap() {
				queue = append(queue, arrival{next, i})
			}
			if now+tick >= end {
				for ; next < end; next += gap() {
					queue = append(queue, arrival{next, i})
				}
			}
			step(phase)
			speed += mixSpeed(rec, rungOf[c.Level()], phase)
			steps++
		}
		r.train = append(r.train, speed/float64(steps))
	}
	for ; len(queue) > 0 || len(pending) > 0; now += tick {
		step(phases[len(phases)-1])
	}
	for i := range phases {
		r.att = append(r.att, 1-float64(late[i])/float64(max(n[i], 1)))
	}
	return r
}

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
