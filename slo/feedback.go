package slo

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// feedback corrects a service's forecasts by what its requests showed:
// where more of them were late than the forecasts of the rungs they met
// expected, on evidence (Config.Alpha), its service times are taken as
// FeedbackStep times as long in every forecast, and where fewer, as
// FeedbackStep times shorter, within FeedbackMax either way. The queue
// model may miss what the hook does not see (time spent before the first
// launch, a service that is not first come first served, interference
// outside its service time); the scale takes it in, on every rung alike,
// so that a rung that shortens the service's times still forecasts
// better than one that does not.
type feedback struct {
	// scale multiplies the service's times in every forecast.
	scale float64
	// n, late and expect are decayed sums (Config.FeedbackMemory) since
	// the scale last changed: requests judged, late ones, and the late
	// ones the forecasts expected.
	n, late, expect float64
	// why says the last change of scale.
	why string
}

func newFeedback() feedback { return feedback{scale: 1} }

// feed adds a step's requests judged against the rung in force: n of
// them, late of them late, expect expected late; the sums decay first
// over dt.
func (f *feedback) feed(n, late int, expect float64, dt, memory time.Duration) {
	d := math.Exp(-dt.Seconds() / memory.Seconds())
	f.n, f.late, f.expect = f.n*d+float64(n), f.late*d+float64(late), f.expect*d+expect
}

// replays is how many times expected serves a step's arrivals again.
const replays = 8

// expected is how many of sv's fresh requests the rung's service times
// (times, scaled) make late: its arrivals since from (judgedFrom: after
// the queue of the rung before drained, so that they met the rung in
// force alone), as they came, served again (lateAgain); and how many are
// fresh and late. The arrivals are the service's own, so that a burst
// the forecast's Poisson arrivals do not have is not taken for longer
// service times: the feedback corrects what the service times miss, not
// the arrivals.
func expected(recent []arrival, from time.Duration, times []time.Duration, scale float64, bound time.Duration, queue bool, seed uint64) (n, late int, expect float64) {
	a := since(recent, from)
	for _, r := range a {
		if r.fresh {
			n++
			if r.late {
				late++
			}
		}
	}
	if n == 0 {
		return n, late, 0
	}
	return n, late, lateAgain(a, times, scale, bound, queue, seed, func(r arrival) bool { return r.fresh })
}

// since is the arrivals of recent at or after from, by arrival.
func since(recent []arrival, from time.Duration) []arrival {
	a := slices.SortedFunc(slices.Values(recent), func(x, y arrival) int { return cmp.Compare(x.at, y.at) })
	k, _ := slices.BinarySearchFunc(a, from, func(x arrival, t time.Duration) int { return cmp.Compare(x.at, t) })
	return a[k:]
}

// lateAgain serves the arrivals a (by arrival) again, first come first
// served (queue; else each on its own), with service times drawn from
// times, scale times as long, replays times over; it is the mean number
// of those counted that came out past bound.
func lateAgain(a []arrival, times []time.Duration, scale float64, bound time.Duration, queue bool, seed uint64, counted func(arrival) bool) float64 {
	if len(a) == 0 || len(times) == 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(a))))
	b := bound.Seconds()
	hits := 0
	for range replays {
		free := math.Inf(-1)
		for _, r := range a {
			at := r.at.Seconds()
			d := scale * times[rng.IntN(len(times))].Seconds()
			end := at + d
			if queue {
				end = max(free, at) + d
				free = end
			}
			if end-at > b && counted(r) {
				hits++
			}
		}
	}
	return float64(hits) / replays
}

// adjust changes the scale where the sums are evidence that the
// forecasts erred (a binomial tail below alpha either way), and then
// starts the sums afresh; it reports whether it changed.
func (f *feedback) adjust(cfg Config, id string) bool {
	n := int(math.Round(f.n))
	late := int(math.Round(f.late))
	if n == 0 {
		return false
	}
	p := min(max(f.expect/f.n, 1e-9), 1)
	switch {
	case late >= 2 && BinomialTail(n, late, p) < cfg.Alpha && f.scale < cfg.FeedbackMax:
		f.scale = min(f.scale*cfg.FeedbackStep, cfg.FeedbackMax)
		f.why = fmt.Sprintf("%s had %d of %d requests late where its forecasts expected %.1f: its service times are taken %.2fx as long",
			id, late, n, f.expect, f.scale)
	case 1-BinomialTail(n, late+1, p) < cfg.Alpha && f.scale > 1/cfg.FeedbackMax:
		f.scale = max(f.scale/cfg.FeedbackStep, 1/cfg.FeedbackMax)
		f.why = fmt.Sprintf("%s had %d of %d requests late where its forecasts expected %.1f: its service times are taken %.2fx as long",
			id, late, n, f.expect, f.scale)
	default:
		return false
	}
	f.n, f.late, f.expect = 0, 0, 0
	return true
}

// BinomialTail is the probability that n requests, each late with
// probability p, have at least k late ones.
func BinomialTail(n, k int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lgN, _ := math.Lgamma(float64(n + 1))
	lp, lq := math.Log(p), math.Log1p(-p)
	sum := 0.0
	for i := k; i <= n; i++ {
		lgI, _ := math.Lgamma(float64(i + 1))
		lgR, _ := math.Lgamma(float64(n - i + 1))
		term := math.Exp(lgN - lgI - lgR + float64(i)*lp + float64(n-i)*lq)
		sum += term
		if term < sum*1e-12 && float64(i) > float64(n)*p {
			break
		}
	}
	return min(sum, 1)
}
