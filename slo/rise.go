package slo

import (
	"fmt"
	"math"
	"time"
)

// swing is how a service's arrival rate over the last Short compares
// with its rate over the Window before, or since the last swing that
// moved the rung (one change of load moves it once), or since its first
// request, or since it began (start: the idle time before it, as after
// a Reset, is no load that rose), and that earlier rate (requests a
// second); 0: too little history to say; 1: a difference the counts do
// not show (given the requests in both spans, a steady Poisson stream
// splits them at least as unevenly with probability SwingAlpha or
// more).
func (c *Controller) swing(sv *service, now time.Duration) (ratio, before float64) {
	if sv.tr.Target().IsZero() {
		return 0, 0
	}
	from := max(now-c.cfg.Short-c.cfg.Window, c.swungAt, sv.tr.Oldest(), sv.begunAt)
	span := now - c.cfg.Short - from
	if span < c.cfg.Short {
		return 0, 0
	}
	nShort, nBefore := sv.tr.Arrivals(now-c.cfg.Short, now), sv.tr.Arrivals(from, now-c.cfg.Short)
	if nBefore == 0 || nBefore < c.cfg.MinSamples/2 || nShort+nBefore < c.cfg.MinSamples {
		return 0, 0
	}
	before = float64(nBefore) / span.Seconds()
	ratio = float64(nShort) / c.cfg.Short.Seconds() / before
	p := c.cfg.Short.Seconds() / (c.cfg.Short + span).Seconds()
	n := nShort + nBefore
	if ratio >= 1 && BinomialTail(n, nShort, p) >= c.cfg.SwingAlpha || ratio < 1 && BinomialTail(n, nBefore, 1-p) >= c.cfg.SwingAlpha {
		return 1, before
	}
	return ratio, before
}

// belowEntry reports whether a fall of load may relax the rung at once:
// only a pre-emption of a rise is undone so. A rung climbed on misses
// waits for calm: a lull of a steady load looks like a fall now and then
// (at 8 requests a second, 2 s hold 16 on average and 10 or fewer one
// time in thirteen).
func (c *Controller) belowEntry() bool { return len(c.rises) > 0 }

// shortRates is the services' arrival rate over the last Short, summed.
func (c *Controller) shortRates(now time.Duration) float64 {
	rate := 0.0
	for _, sv := range c.services {
		rate += c.shortRate(sv, now)
	}
	return rate
}

// shortRate is a service's arrival rate over the last Short.
func (c *Controller) shortRate(sv *service, now time.Duration) float64 {
	return float64(sv.tr.Arrivals(now-c.cfg.Short, now)) / c.cfg.Short.Seconds()
}

// rise is a pre-emption in force: the service whose load rose, its
// arrival rate before the rise (over the Window before it, and over four
// Windows: a lull of a steady load makes the first low), its rate at the
// rise, the rung it started from, when it was made and whether it has
// lasted a Window since (checked).
type rise struct {
	id                  string
	before, long, after float64
	from                int
	at                  time.Duration
	checked             bool
}

// newRise records a pre-emption of sv's rise from the rate before at now.
func (c *Controller) newRise(sv *service, before float64, now time.Duration) rise {
	r := rise{id: sv.id, before: before, long: before, after: c.shortRate(sv, now), from: c.level, at: now}
	from := max(now-c.cfg.Short-4*c.cfg.Window, sv.tr.Oldest())
	if span := now - c.cfg.Short - from; span > c.cfg.Window {
		r.long = float64(sv.tr.Arrivals(from, now-c.cfg.Short)) / span.Seconds()
	}
	return r
}

// lapsed is the last rise if it is over: a Window after it, its
// service's arrival rate since is below Swing times the longer rate
// before it (a burst of a steady load, or a rise too small to pre-empt;
// a rise that lasted is checked and stays); or within a Window of a fall of load, the service's
// rate over the last Short is back below the middle of the rise. It says
// why.
func (c *Controller) lapsed(now time.Duration) (rise, string, bool) {
	if len(c.rises) == 0 {
		return rise{}, "", false
	}
	r := &c.rises[len(c.rises)-1]
	sv := c.service(r.id)
	if sv == nil {
		return *r, fmt.Sprintf("%s is gone", r.id), true
	}
	if c.fellAt > r.at && now-c.fellAt <= c.cfg.Window && now-c.changedAt >= c.cfg.Settle {
		if rate := c.shortRate(sv, now); rate <= math.Sqrt(r.before*r.after) {
			return *r, fmt.Sprintf("the load fell back: %s at %.1f requests/s, %.1f/s before its rise", r.id, rate, r.before), true
		}
	}
	if r.checked || now-r.at < c.cfg.Window {
		return rise{}, "", false
	}
	since := float64(sv.tr.Arrivals(r.at, now)) / (now - r.at).Seconds()
	if since < r.long*c.cfg.Swing {
		return *r, fmt.Sprintf("the rise of %s's load did not last: %.1f requests/s since it against %.1f/s before", r.id, since, r.long), true
	}
	r.checked = true
	return rise{}, "", false
}

// JumpExponent is the growth a pre-emption expects when it passes over a
// rung predicted to miss (preemptTo): the median of the same 45 pairs of
// phases, 0.32, so that a rise is not met with more restraint than the
// typical growth asks (0.5 there missed 33 phases of 374 in the replay,
// not 38, but held a slow rise on a rung past the one it needed, which
// TestControllerReturnsToAHeldRung refuses).
const JumpExponent = 0.32

// preemptTo is the rung a pre-emption of a rise climbs to: the next one
// up, or past it while a service is predicted past its bound there
// (JumpExponent) at its load over the last Short, from what it showed
// there at a lower load, and the rung has not held every target at this
// load lately; and the rungs passed over, with why, for the decision's
// reason. Climbing one rung at a time, the misses of a steep rise came
// before the evidence for the next rung (the replay of eleven H100
// rounds: high phases missed 36 of 99 that way, 23 passing over the
// rungs predicted to miss, TestControllerReplayScore).
func (c *Controller) preemptTo(now time.Duration) (int, string) {
	top := len(c.cfg.Ladder) - 1
	to, past := c.up(), ""
	rate := c.shortRates(now)
	for to < top && !c.heldAt(to, now, rate) {
		_, why, _ := c.predictsMiss(to, now, true, JumpExponent)
		if why == "" {
			break
		}
		past += "; past " + c.cfg.Ladder[to].String() + ": " + why
		to = c.above(to)
	}
	return to, past
}
