package slo

import (
	"fmt"
	"math"
	"time"
)

// verdict is a service's standing in a window, as the controller acts
// on it.
type verdict int

const (
	// wellWithin: within its target with room (or nothing to hold).
	wellWithin verdict = iota
	// within: within its target, close to it.
	within
	// missed: past it, on evidence.
	missed
)

// judge looks at one service's requests judged, those that arrived after
// arrived (judgedFrom; st: the Window's; long: those since the change,
// up to Evidence back): its verdict, how far it
// is past its target (0: not past it) and the requests that say so.
func (c *Controller) judge(sv *service, now, arrived time.Duration, st, long Stats) (verdict, float64, Stats) {
	t := sv.tr.Target()
	bound := sv.tr.Bound()
	switch {
	case t.IsZero():
		sv.state, sv.detail = Met, "no target"
		return wellWithin, 0, st
	case bound == 0:
		sv.state, sv.detail = Calibrating, fmt.Sprintf("%d of %d requests alone measured for %s", len(sv.alone), c.cfg.MinAlone, t)
		return wellWithin, 0, st
	}
	was := sv.aloneLate
	un := c.unattainable(sv, now)
	sv.newlyUnattainable = un && was == 0
	v, over, judged := c.judgeAgainst(sv, now, arrived, st, long)
	if un {
		// Alone it misses its target: the offline jobs are held to add no
		// more late requests than its budget to those it has alone.
		sv.state = Unattainable
		d := fmt.Sprintf("p%g alone %v > bound %v (%d requests alone, %.1f %% late)",
			t.Percentile, roundMs(sv.alonePct), bound, len(sv.alone), 100*sv.aloneLate)
		if b := c.budget(sv); b < 1 {
			d += fmt.Sprintf("; held to %.1f %% late", 100*b)
			if c.cfg.Aim < 1 {
				// Evidence of more than the aim's share of the budget
				// tightens (evidence).
				d += fmt.Sprintf(" (aiming at %.1f %%)", 100*c.aimedAt(sv))
			}
			d += ": " + sv.detail
		}
		sv.detail = d
	}
	return v, over, judged
}

// unattainable reports whether sv's absolute target is past what it
// does alone (MinAlone requests alone): its percentile alone past the
// bound, and more of them late than its budget on evidence (Alpha: one
// late of 50 alone is no proof that a p99 is out of reach). It sets
// sv.aloneLate: the share of those requests past the bound (0:
// attainable), and sv.alonePct: their latency at the percentile. A verdict whose requests alone are older than Remember
// stands until a probe measures the service alone again (needsProbe),
// which starts its requests alone afresh (Observe).
func (c *Controller) unattainable(sv *service, now time.Duration) bool {
	t, bound := sv.tr.Target(), sv.tr.Bound()
	n := len(sv.alone)
	if t.Ratio != 0 || bound == 0 || n < c.cfg.MinAlone {
		sv.aloneLate = 0
		return false
	}
	if now-sv.aloneAt >= c.cfg.Remember {
		return sv.aloneLate > 0
	}
	sv.aloneLate, sv.alonePct = 0, aloneAt(sv.alone, t.Percentile)
	if sv.alonePct <= bound {
		return false
	}
	late := 0
	for _, l := range sv.alone {
		if l > bound {
			late++
		}
	}
	if BinomialTail(n, late, t.Budget()) >= c.cfg.Alpha {
		return false
	}
	sv.aloneLate = float64(late) / float64(n)
	return true
}

// aimedAt is the share of sv's requests late past which evidence
// tightens: Aim times its target's budget, and its share late alone.
func (c *Controller) aimedAt(sv *service) float64 {
	return c.cfg.Aim*sv.tr.Target().Budget() + sv.aloneLate
}

// budget is the share of sv's requests that may be late: its target's,
// and, for a target it misses alone, the share late alone besides.
func (c *Controller) budget(sv *service) float64 {
	return sv.tr.Target().Budget() + sv.aloneLate
}

// judgeAgainst is judge's verdict of a service with a target and a
// bound, against its budget (Controller.budget).
func (c *Controller) judgeAgainst(sv *service, now, arrived time.Duration, st, long Stats) (verdict, float64, Stats) {
	t, bound := sv.tr.Target(), sv.tr.Bound()
	if sv.futileUntil > now {
		if r := sv.tr.Window(now-c.cfg.Window, now).Rate; r <= futileLoad*sv.futileRate && r >= sv.futileRate/futileLoad {
			sv.state, sv.detail = NotHeld, sv.futileWhy
			return wellWithin, 0, st
		}
		sv.futileUntil = 0 // its load changed: judged again
	}
	if st.N == 0 {
		sv.state, sv.detail = Idle, "no request in the window"
		return wellWithin, 0, st
	}
	desc := fmt.Sprintf("p%g %v against %v over %d requests, %d late", t.Percentile, roundMs(st.Pct), bound, st.N, st.Late)
	if p, ok := c.evidence(st, sv); ok {
		sv.state, sv.detail = Missed, desc
		return missed, -math.Log(p), st
	}
	// Misses too few for a Window may be many since the rung changed.
	room := st
	if long.N > st.N {
		if p, ok := c.evidence(long, sv); ok {
			sv.state, sv.detail = Missed, fmt.Sprintf("%d of %d requests late since %v ago (p%g %v against %v)",
				long.Late, long.N, (now-max(now-c.cfg.Evidence, arrived)).Round(time.Second), t.Percentile, roundMs(long.Pct), bound)
			return missed, -math.Log(p), long
		}
		room = long
	}
	sv.state, sv.detail = Met, desc
	// Room is judged on enough requests to place the percentile (100 for
	// a p99: fewer put their largest there), over the span since the
	// rung changed where the window has too few.
	// Or, on fewer, with none of them past twice the headroom.
	need := c.placesPercentile(t)
	h := c.cfg.Headroom
	if sv.aloneLate > 0 {
		// Past its bound alone, its percentile never has room: room is no
		// more late requests than alone and half its budget.
		if float64(room.Late) <= (sv.aloneLate+t.Budget()/2)*float64(room.N) && room.N >= need {
			return wellWithin, 0, st
		}
		return within, 0, st
	}
	if float64(room.Late) <= t.Budget()*float64(room.N)/2 && room.N >= need && float64(room.Pct) <= (1-h)*float64(bound) ||
		room.N >= c.cfg.MinSamples && float64(room.Max) <= (1-2*h)*float64(bound) {
		return wellWithin, 0, st
	}
	return within, 0, st
}

// evidence reports whether st's late requests are more than sv would
// have had late with probability Aim times its target's budget (and, if
// it misses the target alone, its share late alone besides), with
// probability below Alpha, and that probability.
func (c *Controller) evidence(st Stats, sv *service) (float64, bool) {
	b := c.aimedAt(sv)
	if st.Late < 2 || float64(st.Late) <= b*float64(st.N) {
		return 1, false
	}
	p := BinomialTail(st.N, st.Late, b)
	alpha := c.cfg.Alpha
	if c.trial {
		alpha = c.cfg.TrialAlpha
	}
	return p, p < alpha
}

// judgedFrom is when a service's requests begin to be judged against the
// rung in force: those that arrived after the change settled and after
// the requests that came before then had ended (Tracker.Drained), at
// most a Window after the change. A queue built before a change
// drains after it whatever the new rung does: on an H100 (round 36) a
// batch-1 service's backlog, judged against each rung passed while it
// drained, climbed the controller from 0.82 of the TPCs to suspend in
// 2 s, and its late requests counted since the change kept it there
// through the next phase.
func (c *Controller) judgedFrom(sv *service) time.Duration {
	from := c.changedAt + c.settle
	if sv.drainFor == from && sv.drainFinal {
		return sv.drainAt
	}
	at, final := sv.tr.Drained(from, c.changedAt+c.cfg.Window)
	sv.drainFor, sv.drainAt, sv.drainFinal = from, at, final
	return at
}

// heldBy reports whether a service's requests since the last change
// (st: up to Evidence back) are enough to place its percentile and hold
// its target: no more late than its budget (Controller.budget: with the
// share late alone of a target out of reach alone). One without a target
// or a bound, futile, or idle since, holds.
func (c *Controller) heldBy(sv *service, now time.Duration, st Stats) bool {
	t := sv.tr.Target()
	if t.IsZero() || sv.tr.Bound() == 0 || sv.futile(now) || st.N == 0 {
		return true
	}
	return st.N >= c.placesPercentile(t) && float64(st.Late) <= c.budget(sv)*float64(st.N)
}

// tellsOfRungs reports whether sv's requests say anything of the rungs:
// it has a target with a bound, and is not a service that no rung holds
// (it misses alone, or restraint does not help it: futile).
func (sv *service) tellsOfRungs(now time.Duration) bool {
	return !sv.tr.Target().IsZero() && sv.tr.Bound() != 0 && sv.state != Unattainable && !sv.futile(now)
}

// futile reports whether sv is left alone now: restraint did not help it
// (giveUp), and FutileFor has not passed.
func (sv *service) futile(now time.Duration) bool { return sv.state == NotHeld && sv.futileUntil > now }

// placesPercentile is how many requests place t's percentile (100 for a
// p99), at least MinSamples and at most what a Tracker keeps.
func (c *Controller) placesPercentile(t Target) int {
	return min(max(c.cfg.MinSamples, int(math.Ceil(1/t.Budget()))), Keep)
}

// close reports whether a service is near its bound in st: some of its
// requests late, or its percentile past the headroom.
func (c *Controller) close(sv *service, st Stats) bool {
	b := sv.tr.Bound()
	return b > 0 && !sv.tr.Target().IsZero() && (st.Late > 0 || float64(st.Pct) > (1-c.cfg.Headroom)*float64(b))
}

// nearing reports whether a service whose load rose comes near its
// bound: over the Window (v within, st close), or in the requests of the
// last Short alone. The Window's requests are mostly of the load before
// the rise: a service well within its target at a low load may be
// close to its bound by the first requests of a high one, and its
// misses come before the evidence of them. judged is when its requests
// begin to be judged (judgedFrom).
func (c *Controller) nearing(sv *service, now, judged time.Duration, v verdict, st Stats) bool {
	if v == within && c.close(sv, st) {
		return true
	}
	recent := sv.tr.Judged(now-c.cfg.Short, judged, now)
	return recent.N >= c.cfg.MinSamples/2 && c.close(sv, recent)
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
