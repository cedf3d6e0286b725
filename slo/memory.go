package slo

import (
	"fmt"
	"math"
	"time"
)

// failMark is a rung's last miss: when, and the services' request rate.
type failMark struct {
	at   time.Duration
	rate float64
	set  bool
}

// refused reports whether rung to missed within Remember at a request
// rate not well above rate.
func (c *Controller) refused(to int, now time.Duration, rate float64) bool {
	f := c.fails[to]
	return f.set && now-f.at < c.cfg.Remember && rate*c.cfg.Swing > f.rate
}

// RiseExponent: a service's latency at its target's percentile on a
// rung grows with its load as the load to this power. Between the load
// phases of the H100 SLO benchmark with absolute targets (rounds 10 and
// 12-15: priority, MPS 70 % and 50 %, 45 pairs of phases) the p99 grew
// as the load to a median 0.32 (middle half 0.25-0.39, at most 0.60;
// priority's median 0.37): 0.5 errs on the side of the target.
const RiseExponent = 0.5

// seenMark is what a service's requests showed on a rung: their latency
// at its target's percentile and their arrival rate, and when.
type seenMark struct {
	pct  time.Duration
	rate float64
	at   time.Duration
	set  bool
}

// predicted is the latency at sv's target percentile predicted on rung
// to at the service's load now (loadOf), from what it showed there at a
// lower load within Remember (0: no prediction: not seen there lately, or
// seen at this load or a higher one).
func (c *Controller) predicted(sv *service, to int, now time.Duration, fell bool, exp float64) time.Duration {
	if to >= len(sv.seen) {
		return 0
	}
	m := sv.seen[to]
	rate := c.loadOf(sv, now, fell)
	if !m.set || now-m.at >= c.cfg.Remember || m.rate <= 0 || rate <= m.rate*heldMargin {
		return 0
	}
	return time.Duration(float64(m.pct) * math.Pow(rate/m.rate, exp))
}

// see keeps what sv's requests judged since the last change (st) show of
// the rung in force, once they are enough to judge (Step does not judge
// during a probe).
func (c *Controller) see(sv *service, now time.Duration, st Stats) {
	if st.N < c.cfg.MinSamples {
		return
	}
	if len(sv.seen) < len(c.cfg.Ladder) {
		sv.seen = make([]seenMark, len(c.cfg.Ladder))
	}
	sv.seen[c.level] = seenMark{pct: st.Pct, rate: st.Rate, at: now, set: true}
}

// loadOf is sv's request rate over the Window (by ends, as its rung's
// marks count them), or its arrival rate over the last Short just after a
// fall of load, which the Window lags.
func (c *Controller) loadOf(sv *service, now time.Duration, fell bool) float64 {
	if fell {
		return c.shortRate(sv, now)
	}
	return sv.tr.Window(now-c.cfg.Window, now).Rate
}

// mayReturn reports whether a fall of load may return to rung to at
// once: it has not missed at the load now lately (refused), and it is not
// predicted to (waitsForPrediction), on the loads over the last Short
// (the Window lags a fall).
func (c *Controller) mayReturn(to int, now time.Duration) bool {
	rate := c.shortRates(now)
	return !c.refused(to, now, rate) && !c.waitsForPrediction(to, now, true, rate)
}

// waitsForPrediction reports whether a step down onto rung to waits: a
// service is predicted past its bound there at its load now (fell: just
// after a fall of load), and the rung did not hold every target at the
// request rate rate lately. The service says why on its status.
func (c *Controller) waitsForPrediction(to int, now time.Duration, fell bool, rate float64) bool {
	sv, why, forecast := c.predictsMiss(to, now, fell, RiseExponent)
	if sv == nil || !forecast && c.heldAt(to, now, rate) {
		// (A forecast miss stands though the rung held lately: what it
		// held was its requests' luck at the load, which the forecast
		// weighs; stepped onto, it would be climbed from again.)
		return false
	}
	sv.detail += "; no step down: " + why
	return true
}

// predictsMiss is a service predicted past its bound on rung to at its
// load now (fell: just after a fall of load), and why (nil: none):
// forecast from its service times there where it has them (forecast
// true), else with the latency it showed there at a lower load growing as
// the load to the power exp.
func (c *Controller) predictsMiss(to int, now time.Duration, fell bool, exp float64) (*service, string, bool) {
	for _, sv := range c.services {
		if !sv.tellsOfRungs(now) {
			continue
		}
		if why, ok := c.forecastMiss(sv, to, now, c.loadOf(sv, now, fell)); ok {
			// Its service times there forecast its queue at this load,
			// which its latency at a lower load grown by a power does not.
			if why != "" {
				return sv, why, true
			}
			continue
		}
		if p := c.predicted(sv, to, now, fell, exp); p > sv.tr.Bound() {
			m := sv.seen[to]
			return sv, fmt.Sprintf("%s predicted at p%g %v on %s (%v at %.1f requests/s, %.1f/s now)", sv.id, sv.tr.Target().Percentile,
				roundMs(p), c.cfg.Ladder[to], roundMs(m.pct), m.rate, c.loadOf(sv, now, fell)), false
		}
	}
	return nil, "", false
}

// heldMargin is how far above the load a rung held a load may be and
// still count as held there: a tenth, the noise of the rates kept.
const heldMargin = 1.1

// heldAt reports whether rung to held every target within Remember at a
// request rate at least near rate (within heldMargin).
func (c *Controller) heldAt(to int, now time.Duration, rate float64) bool {
	h := c.held[to]
	return h.set && now-h.at < c.cfg.Remember && h.rate*heldMargin >= rate
}

// heldBelow is the cheapest rung below the one in force that held every
// target within Remember at a request rate at least near rate (within
// heldMargin), with no rung from it up to the one in force refused at
// rate.
func (c *Controller) heldBelow(now time.Duration, rate float64) (int, bool) {
	for to := 0; to < c.level; to++ {
		if !c.heldAt(to, now, rate) {
			continue
		}
		ok := true
		for l := to; l < c.level && ok; l++ {
			ok = !c.refused(l, now, rate)
		}
		if ok {
			return to, true
		}
	}
	return 0, false
}

// Forget clears what the controller remembers of the rungs (the loads
// each missed and held at, what each service's requests showed on each):
// they were measured beside the jobs of then, and a service or offline
// job that comes or goes changes what a rung holds.
func (c *Controller) Forget() {
	clear(c.fails)
	clear(c.held)
	for _, sv := range c.services {
		clear(sv.seen)
		clear(sv.times)
	}
}
