package slo

import (
	"math"
	"math/rand/v2"
	"time"
)

// The queue forecast. A service that answers one request at a time,
// first come first served, is late through its queue far more than
// through its service time: in H100 round 40 of the SLO benchmark no
// service time passed 25 ms while the p99 did. Its service times hardly
// move with its load (rounds 42 and 43: each static setting's mean moved
// by 0.5 ms at most from 8 to 30 requests a second; on the H200
// calibration a median 1.03x from the low load to the high), so its
// share in time at any load follows from the service times met on a
// rung: served again through a queue at that load. On the recorded
// arrivals of 21 H100 rounds the GPU's share in time lay in the queue
// model's middle 95 % in 430 of 447 windows (TestQueueModelMatchesGPU).
//
// The hook measures a service time (the first launch after the service
// was idle to the synchronisation that ends the request); a service that
// reports its latencies (arrival to answer) is forecast through the
// queue, one the hook alone measures by its service times alone (its
// queue is not seen).

// ForecastDraws is how many requests a forecast serves: at 4,000 the
// share moved by ±0.3-0.45 points from one stream of arrivals to another
// at 24-30 requests a second (BenchmarkForecast: 0.15 ms a forecast at
// 16,000 on the 2-core build machine).
const ForecastDraws = 16000

// MinServiceTimes is the fewest service times of a rung a forecast rests
// on; ServiceTimesKept the most kept per rung (the latest).
const (
	MinServiceTimes  = 50
	ServiceTimesKept = 512
)

// Forecast is the share of requests within bound of a service that
// serves one request at a time, first come first served, at Poisson
// arrivals of rate a second, each taking a service time drawn from
// service (with replacement). It is deterministic: the same inputs give
// the same share. It is 1 with no service times or no load.
func Forecast(service []time.Duration, rate float64, bound time.Duration) float64 {
	return 1 - forecastOutlook(service, 1, rate, bound, true, 0.01, 1).late
}

// outlook is a forecast on one rung: the share of a service's requests
// late, and the probability that a window of them (Config.Judge at its
// rate) keeps its target.
type outlook struct {
	late, hold float64
	// disp is the dispersion of the late requests (at least 1).
	disp float64
}

// forecastOutlook is the outlook of a service whose service times are
// scale times those of service: through its queue at Poisson arrivals of
// rate (queue), or, for a service whose queue the hook does not see, of
// the service times themselves; a window is n requests (at least one) of
// which at most budget may be late. Late requests come in runs (a queue
// that built up makes the next ones late too): the runs of the simulated
// requests give the mean run's length (disp), and a window's late
// requests are taken as Poisson runs of that mean length (holdChance).
func forecastOutlook(service []time.Duration, scale, rate float64, bound time.Duration, queue bool, budget float64, n int) outlook {
	if len(service) == 0 || queue && rate <= 0 {
		return outlook{0, 1, 1}
	}
	b := bound.Seconds()
	if !queue {
		late := 0
		for _, d := range service {
			if scale*d.Seconds() > b {
				late++
			}
		}
		p := float64(late) / float64(len(service))
		return outlook{p, holdChance(p, budget, float64(n), 1), 1}
	}
	rng := rand.New(rand.NewPCG(uint64(len(service)), uint64(bound)))
	var at, free float64
	late, runs, prev := 0, 0, false
	for range ForecastDraws {
		at += rng.ExpFloat64() / rate
		free = max(free, at) + scale*service[rng.IntN(len(service))].Seconds()
		now := free-at > b
		if now {
			late++
			if !prev {
				runs++
			}
		}
		prev = now
	}
	p := float64(late) / ForecastDraws
	d := 1.0
	if runs > 0 {
		d = float64(late) / float64(runs)
	}
	return outlook{p, holdChance(p, budget, float64(n), d), d}
}

// holdChance is the probability that a window of n requests, each late
// with probability p in runs of mean length d, has no more than budget of
// them late: its late requests are a Poisson number of runs (mean n·p/d)
// of geometric lengths of mean d (a Pólya-Aeppli count; d 1 is Poisson).
func holdChance(p, budget, n, d float64) float64 {
	if p <= 0 {
		return 1
	}
	allowed := int(math.Floor(budget*n + 1e-9))
	// A run longer than a quarter of the window (a queue that does not
	// drain: overload) is taken as a quarter window long, so that a late
	// share of most requests leaves windows late, not one long run that
	// misses most windows.
	d = min(d, max(1, n/4))
	runs := n * p / d
	q := 1 / max(d, 1)
	sum := 0.0
	lgRuns := math.Log(runs)
	for k := 0; k <= allowed; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		pk := math.Exp(float64(k)*lgRuns - runs - lk)
		if k == 0 {
			sum += pk
			continue
		}
		// S_k, the late requests of k runs, is k plus a negative binomial
		// count of failures before k successes of chance q (k itself
		// where every run is one request long).
		within := 1.0
		if q < 1 {
			within = 0
			for j := 0; j <= allowed-k; j++ {
				within += math.Exp(lchoose(j+k-1, j) + float64(k)*math.Log(q) + float64(j)*math.Log1p(-q))
			}
		}
		sum += pk * min(within, 1)
	}
	return min(sum, 1)
}

// lchoose is the log of n choose k.
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// replayLate is the share of the arrivals at or after from (of recent)
// that would have been past bound, served again first come first served
// with service times drawn from service (scale times as long).
func replayLate(recent []arrival, from time.Duration, service []time.Duration, scale float64, bound time.Duration, seed uint64) float64 {
	a := since(recent, from)
	if len(a) == 0 {
		return 0
	}
	return lateAgain(a, service, scale, bound, true, seed, func(arrival) bool { return true }) / float64(len(a))
}

// rateStep is the grid a forecast's rate is rounded up to (2 %): a rung's
// forecasts at about the same load are made once.
const rateStep = 1.02

// gridRate is rate rounded up to the grid of rateStep.
func gridRate(rate float64) float64 {
	if rate <= 0 {
		return 0
	}
	return math.Pow(rateStep, math.Ceil(math.Log(rate)/math.Log(rateStep)))
}

// serviceTimes are a service's service times on one rung, the latest
// ServiceTimesKept, when the last came, how many were ever added (the
// forecasts' cache key), and whether they were measured while a
// suspension left an offline job running (failed).
type serviceTimes struct {
	d      []time.Duration
	at     time.Duration
	added  uint64
	failed bool
}

// add keeps one service time measured at now (failed: while a
// suspension left an offline job running), afresh where the last is
// older than remember or was measured failed where this one is not, or
// the other way round.
func (st *serviceTimes) add(d, now, remember time.Duration, failed bool) {
	if len(st.d) > 0 && (now-st.at >= remember || st.failed != failed) {
		st.d = st.d[:0]
	}
	st.failed = failed
	if len(st.d) >= ServiceTimesKept {
		st.d = st.d[1:]
	}
	st.d, st.at = append(st.d, d), now
	st.added++
}

// basis reports whether the times may be the basis of other rungs'
// forecasts (through the priors, the elasticity): usable, and not
// measured under a suspension that left an offline job running (they say
// what that suspension did, not what the rungs do: a suspension that
// stopped nothing, scaled by the priors, made the cheaper rungs look a
// fifth slower than they are).
func (st *serviceTimes) basis(now, remember time.Duration) bool {
	return st.usable(now, remember) && !st.failed
}

// usable reports whether the times are enough, and recent enough, to
// forecast from.
func (st *serviceTimes) usable(now, remember time.Duration) bool {
	return len(st.d) >= MinServiceTimes && now-st.at < remember
}

// forecastKey is what a forecast depends on.
type forecastKey struct {
	rung   int
	added  uint64
	scale  float64
	rate   float64
	queue  bool
	bound  time.Duration
	budget float64
	prior  int // the rung a prior forecast is for; -1: its own
	factor float64
}

// forecastCache keeps a service's forecasts (a step asks each rung at
// two loads, and most rungs' service times do not change between steps).
type forecastCache map[forecastKey]outlook

// maxCached bounds a service's cache; past it the cache starts afresh.
const maxCached = 512
