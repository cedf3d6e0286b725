package slo

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// service is one online job and what the controller measures of it: its
// requests (the Tracker), its service times per rung, its arrival rate,
// the feedback on its forecasts and what it ran alone.
type service struct {
	id string
	tr *Tracker
	// times, per rung, its service times there (the hook's measures).
	times []serviceTimes
	cache forecastCache
	// replays are this step's forecasts on its own arrivals (cleared at
	// each step).
	replays forecastCache
	// firstArrival and lastArrival: the earliest and the latest arrival
	// among its ended requests (first come first served, every request
	// that arrived before lastArrival has ended).
	firstArrival, lastArrival time.Duration
	arrived                   bool
	// loadFrom is when its load last changed (rate).
	loadFrom time.Duration
	// hookSeen: the hook measured its service times; until then its
	// reported latencies stand in for them (and its queue is not
	// forecast: queued).
	hookSeen bool
	// idle: no request of it ended in the last Window (set at each step).
	idle bool
	// requests counts its requests judged (the source in force, the
	// tracker's), warm-up included.
	requests int
	// alone: latencies measured alone after its warm-up (a ratio
	// target's bound), the last at aloneAt.
	alone   []time.Duration
	aloneAt time.Duration
	fb      feedback
	// recent are its latest requests by arrival (Replay and two Windows
	// back),
	// those judged against the rung in force since the last step marked
	// fresh: the feedback replays their arrivals (expected).
	recent []arrival
	// drainFor, drainAt, drainFinal: judgedFrom's answer for the change
	// that settled at drainFor (final: no request yet to end moves it).
	drainFor, drainAt time.Duration
	drainFinal        bool
	state             State
	detail            string
	futile            bool
}

func newService(id string, t Target) *service {
	bound, _ := t.Resolve(0)
	return &service{id: id, tr: NewTracker(t, bound), state: Idle, fb: newFeedback(), cache: forecastCache{}, replays: forecastCache{}}
}

// queued reports whether sv's forecasts go through its queue: it
// reports its latencies (arrival to answer) and the hook measures its
// service times.
func (sv *service) queued() bool { return sv.tr.Reported() && sv.hookSeen }

// counts reports whether sv takes part in the choice of a rung: it has
// a target with a bound in force, and a request in the last Window (at
// the last step: idle). A service that sends nothing has no load to
// hold: before, one idle after late requests kept the controller trying
// a rung its requests never measured, again and again (suspending the
// offline jobs for nobody).
func (sv *service) counts() bool { return sv.targeted() && !sv.idle }

// targeted reports whether sv has a target with a bound in force.
func (sv *service) targeted() bool { return !sv.tr.Target().IsZero() && sv.tr.Bound() > 0 }

// observe records one request of sv at the rung in force: its service
// time (a hook sample), its arrival, and, for the source sv is judged
// by, whether it counts against the rung in force (judgedFrom) for the
// feedback.
func (c *Controller) observe(sv *service, s Sample) {
	primary := s.Source == Reported || !sv.tr.Reported()
	switch {
	case s.Source == Hook && !sv.hookSeen:
		// The hook's service times replace the latencies kept in their
		// stead.
		sv.hookSeen = true
		clear(sv.times)
		clear(sv.cache)
		c.keepServiceTime(sv, s)
	case s.Source == Hook || !sv.hookSeen:
		c.keepServiceTime(sv, s)
	}
	sv.tr.Add(s)
	if !primary {
		return
	}
	sv.requests++
	arrived := s.At - s.Latency
	if !sv.arrived || arrived < sv.firstArrival {
		sv.firstArrival = arrived
	}
	if !sv.arrived || arrived > sv.lastArrival {
		sv.lastArrival = arrived
	}
	sv.arrived = true
	a := arrival{at: arrived}
	if !c.probing && !c.settling(arrived) && arrived > c.judgedFrom(sv) {
		a.fresh = true
		a.late = sv.tr.Bound() > 0 && s.Latency > sv.tr.Bound()
	}
	k := 0
	for k < len(sv.recent) && sv.recent[k].at < sv.lastArrival-max(2*c.cfg.Window, c.cfg.Replay) {
		k++
	}
	sv.recent = append(sv.recent[k:], a)
}

// arrival is one of a service's recent requests: when it arrived, and,
// when it is fresh (judged against the rung in force since the last
// step), whether it was late.
type arrival struct {
	at          time.Duration
	fresh, late bool
}

// keepServiceTime records a service time of sv on the rung in force (or
// its latency, where the hook measures none),
// once the rung has settled (a request that started before carries the
// rung before), not while the controller probes (the top rung held for
// a measure alone) nor within Settle of a change of the suspension's
// state (SetSuspended); those of a suspension that left an offline job
// running are kept apart from those of a whole one.
func (c *Controller) keepServiceTime(sv *service, s Sample) {
	start := s.At - s.Latency
	if c.probing || start <= c.changedAt+c.cfg.Settle || c.settling(start) {
		return
	}
	if len(sv.times) < len(c.cfg.Ladder) {
		sv.times = slices.Grow(sv.times, len(c.cfg.Ladder))[:len(c.cfg.Ladder)]
	}
	sv.times[c.canon(c.level)].add(s.Latency, s.At, c.cfg.Remember, c.unsuspended)
}

// rate is sv's arrival rate: over the span since its load last changed
// (at most RateSpan back), so that a steady load is counted over many
// arrivals; a change shows when the arrivals of the last Short differ
// from the rate before on evidence (SwingAlpha), and the span then
// starts again at the change. Both end at its last arrival among ended
// requests (arrivals after it may not have ended yet), or at now once
// it has been idle a Window.
func (c *Controller) rate(sv *service, now time.Duration) float64 {
	if !sv.arrived {
		return 0
	}
	ref := sv.lastArrival
	if now-ref >= c.cfg.Window {
		ref = now
	}
	from := max(sv.loadFrom, sv.firstArrival, ref-RateSpan)
	if ref-from > c.cfg.Short {
		before := sv.tr.Arrivals(from, ref-c.cfg.Short)
		recent := sv.tr.Arrivals(ref-c.cfg.Short, ref)
		p := c.cfg.Short.Seconds() / (ref - from).Seconds()
		n := before + recent
		if BinomialTail(n, recent, p) < SwingAlpha || 1-BinomialTail(n, recent+1, p) < SwingAlpha {
			sv.loadFrom, from = ref-c.cfg.Short, ref-c.cfg.Short
		}
	}
	span := max(ref-from, c.cfg.Short)
	return float64(sv.tr.Arrivals(ref-span, ref)) / span.Seconds()
}

// RateSpan is the longest span a steady load's rate is counted over:
// 30 s hold some 300 arrivals at 10 a second, a rate within 6 %.
const RateSpan = 30 * time.Second

// SwingAlpha is the evidence a change of load needs (rate): tested at
// every step, a looser one would take noise for changes now and then
// (a Short of a steady load at 50 a second passes 2 % every few seconds).
const SwingAlpha = 0.001

// judgedFrom is when a service's requests begin to count against the
// rung in force: those that arrived after the change settled and after
// the requests that came before then had ended (Tracker.Drained), at
// most a Window after the change. A queue built before a change drains
// after it whatever the new rung does: on an H100 (round 36) a batch-1
// service's backlog, judged against each rung passed while it drained,
// climbed the controller of then from 0.82 of the TPCs to suspend in 2 s.
func (c *Controller) judgedFrom(sv *service) time.Duration {
	from := c.changedAt + c.cfg.Settle
	if sv.drainFor == from && sv.drainFinal {
		return sv.drainAt
	}
	at, final := sv.tr.Drained(from, c.changedAt+c.cfg.Window)
	sv.drainFor, sv.drainAt, sv.drainFinal = from, at, final
	return at
}

// forecast is sv's outlook on rung i at rate, its service times scaled
// by the feedback: from its own service times there, or from those of
// the rung with the most measured (the rung in force first) through the
// priors, its share late counted penalty times; from is the rung whose
// service times it rests on. ok is false where sv has no service times
// to forecast from.
func (c *Controller) forecast(sv *service, i int, now time.Duration, rate, penalty float64) (o outlook, from int, ok bool) {
	i = c.canon(i)
	if i < len(sv.times) && sv.times[i].usable(now, c.cfg.Remember) {
		return c.cached(sv, forecastKey{rung: i, added: sv.times[i].added, prior: -1, factor: 1}, rate), i, true
	}
	m := c.nearest(sv, i, now)
	if m < 0 {
		return outlook{}, -1, false
	}
	f := math.Pow(c.prior(i)/c.prior(m), c.elasticity(sv, now))
	o = c.cached(sv, forecastKey{rung: m, added: sv.times[m].added, prior: i, factor: f}, rate)
	if penalty != 1 {
		o.late = min(1, o.late*penalty)
		o.hold = holdChance(o.late, c.cfg.Aim*sv.tr.Target().Budget(), c.window(rate), o.disp)
	}
	return o, m, true
}

// elasticity is how strongly sv's service times follow the priors: the
// exponent e that best gives, on the rungs it was measured on, its mean
// service time on each against the one with the most as the priors'
// ratio to the power e (least squares of the logarithms), within
// [0.5, 4] (a rung is taken to help at least half as much as the priors
// say until it is measured); 1 until two rungs of different priors were
// measured. BERT inference
// beside vgg19 on an H200 shortened to 0.77x its time on priority at half
// the TPCs where the priors say 0.91x (e about 2.8); resnet50 at batch 1,
// to 0.96x (e about 0.5).
func (c *Controller) elasticity(sv *service, now time.Duration) float64 {
	base := c.measured(sv, now, true)
	if base < 0 {
		return 1
	}
	mb := meanDuration(sv.times[base].d)
	fb := c.prior(base)
	var sxy, sxx float64
	for i := range sv.times {
		if i == base || !sv.times[i].basis(now, c.cfg.Remember) {
			continue
		}
		x := math.Log(c.prior(i) / fb)
		y := math.Log(meanDuration(sv.times[i].d) / mb)
		sxy, sxx = sxy+x*y, sxx+x*x
	}
	if sxx < 1e-6 {
		return 1
	}
	return min(max(sxy/sxx, 0.5), 4)
}

// prior is rung i's prior factor: that of the highest rung that
// restrains as it does now ("tpcs=0.75@1" beside one trainer is
// "tpcs=0.75").
func (c *Controller) prior(i int) float64 {
	for i < len(c.alike) && c.alike[i] {
		i++
	}
	return c.cfg.Priors.of(c.cfg.Ladder[i])
}

// meanDuration is the mean of v, in any unit (v not empty).
func meanDuration(v []time.Duration) float64 {
	sum := 0.0
	for _, d := range v {
		sum += float64(d)
	}
	return sum / float64(len(v))
}

// window is how many requests a window judged at rate holds (at least
// one): Config.Judge's.
func (c *Controller) window(rate float64) float64 {
	return max(1, math.Round(rate*c.cfg.Judge.Seconds()))
}

// nearest is the measured rung nearest rung i in the ladder (times that
// may be a basis: serviceTimes.basis), whose
// service times of sv a prior forecast of rung i scales (the lower of
// two as near; -1: none): a rung may help one service less than the one
// below it (issue 52's round B), so that the rungs beside it say most of
// it.
func (c *Controller) nearest(sv *service, i int, now time.Duration) int {
	best := -1
	for j := range sv.times {
		if c.canon(j) == j && sv.times[j].basis(now, c.cfg.Remember) && (best < 0 || abs(j-i) < abs(best-i)) {
			best = j
		}
	}
	return best
}

func abs(x int) int { return max(x, -x) }

// measured is a rung with service times of sv to forecast from: the rung
// in force if it has enough, else the one with the most (-1: none); with
// basis, only rungs whose times may be the basis of other rungs'
// forecasts (serviceTimes.basis).
func (c *Controller) measured(sv *service, now time.Duration, basis bool) int {
	ok := func(i int) bool {
		if basis {
			return sv.times[i].basis(now, c.cfg.Remember)
		}
		return sv.times[i].usable(now, c.cfg.Remember)
	}
	cur := c.canon(c.level)
	if cur < len(sv.times) && ok(cur) {
		return cur
	}
	best := -1
	for i := range sv.times {
		if ok(i) && (best < 0 || len(sv.times[i].d) > len(sv.times[best].d)) {
			best = i
		}
	}
	return best
}

// cached is the outlook of key's service times (times the feedback's
// scale and the key's factor) at rate rounded up to the grid, from the
// cache where it was made before; with the service's own arrivals of the
// last Replay served again, where they leave more late.
func (c *Controller) cached(sv *service, key forecastKey, rate float64) outlook {
	key.scale, key.rate, key.queue, key.bound = sv.fb.scale, gridRate(rate), sv.queued(), sv.tr.Bound()
	key.budget = c.cfg.Aim * sv.tr.Target().Budget()
	n := c.window(key.rate)
	o, ok := sv.cache[key]
	if !ok {
		if len(sv.cache) >= maxCached {
			clear(sv.cache)
		}
		o = forecastOutlook(sv.times[key.rung].d, key.scale*key.factor, key.rate, key.bound, key.queue, key.budget, int(n))
		sv.cache[key] = o
	}
	if !key.queue || c.cfg.Replay <= 0 {
		return o
	}
	// The service's own arrivals of the last Replay, served again: a
	// pattern the Poisson arrivals at one rate lack (bursts) is forecast
	// too. The replays change with every step's arrivals.
	key.rate = -1
	r, ok := sv.replays[key]
	if !ok {
		r.late = replayLate(sv.recent, sv.lastArrival-c.cfg.Replay, sv.times[key.rung].d, key.scale*key.factor, key.bound, uint64(key.rung))
		sv.replays[key] = r
	}
	if r.late > o.late {
		o.late = r.late
		o.hold = holdChance(o.late, key.budget, n, o.disp)
	}
	return o
}

// says is sv's forecast on rung i at rate, for reasons: "svc 99.2 % in
// time on tpcs=0.5 at 31.0 requests/s, a window of 20s kept with 97 %
// (its 512 service times there)".
func (c *Controller) says(sv *service, i int, now time.Duration, rate, penalty float64) string {
	o, from, ok := c.forecast(sv, i, now, rate, penalty)
	if !ok {
		return fmt.Sprintf("%s has no service times to forecast %s from", sv.id, c.cfg.Ladder[i])
	}
	s := fmt.Sprintf("%s %.1f %% in time on %s at %.1f requests/s, a window of %v kept with %.0f %% (", sv.id, 100*(1-o.late), c.cfg.Ladder[i], rate,
		c.cfg.Judge, 100*o.hold)
	if from == c.canon(i) {
		s += fmt.Sprintf("its %d service times there", len(sv.times[from].d))
	} else {
		s += fmt.Sprintf("its %d service times on %s through the priors", len(sv.times[from].d), c.cfg.Ladder[from])
		if penalty != 1 {
			s += fmt.Sprintf(", late counted %gx", penalty)
		}
	}
	if sv.fb.scale != 1 {
		s += fmt.Sprintf(", taken %.2fx as long by feedback", sv.fb.scale)
	}
	return s + ")"
}

// Seed gives a service the service times of a rung measured elsewhere
// (a calibration run beside the same jobs), as if measured at now: the
// controller then forecasts that rung from them until they are older
// than Remember or forgotten (Forget). Unknown ids and levels are
// ignored.
func (c *Controller) Seed(id string, level int, times []time.Duration, now time.Duration) {
	sv := c.service(id)
	if sv == nil || level < 0 || level >= len(c.cfg.Ladder) {
		return
	}
	if len(sv.times) < len(c.cfg.Ladder) {
		sv.times = slices.Grow(sv.times, len(c.cfg.Ladder))[:len(c.cfg.Ladder)]
	}
	sv.hookSeen = true
	for _, d := range times {
		sv.times[c.canon(level)].add(d, now, c.cfg.Remember, false)
	}
}
