package slo

import (
	"fmt"
	"time"
)

// climb is a run of tightenings: the rung it started from and the
// latency of the service that started it, at its target's percentile.
type climb struct {
	id   string
	from int
	pct  time.Duration
}

// atTop handles a service still missing its target at the top rung: if
// the climb helped it (its latency fell by a tenth or more), the top rung
// stays and the service is said not held; if it did not, the misses are
// not the offline jobs' doing (giveUp).
func (c *Controller) atTop(now time.Duration, sv *service, st Stats) (Decision, bool) {
	cl := c.climb
	if cl == nil || cl.id != sv.id || st.N < c.cfg.MinSamples || float64(st.Pct) < 0.9*float64(cl.pct) {
		sv.state = NotHeld
		sv.detail = fmt.Sprintf("%s at the top rung (%s)", sv.detail, c.Rung())
		return Decision{}, false
	}
	return c.giveUp(now, sv, fmt.Sprintf("p%g %v at %s against %v at %s: restraining the offline jobs does not help it",
		sv.tr.Target().Percentile, roundMs(st.Pct), c.Rung(), roundMs(cl.pct), c.cfg.Ladder[cl.from]))
}

// topDidNotHelp reports whether the top rung was seen lately at about
// sv's load now (within futileLoad either way) with its latency at the
// percentile no more than a tenth below st's: a climb would not help it.
// A machine that stalls on its own makes every rung miss alike, and each
// time a service is judged again its misses would climb to the top anew
// (round 17 on an H100, docs/results/slo-h100-predict.md). It says why.
func (c *Controller) topDidNotHelp(sv *service, st Stats, now time.Duration) (string, bool) {
	top := len(c.cfg.Ladder) - 1
	if st.N < c.cfg.MinSamples || len(sv.seen) <= top {
		return "", false
	}
	m := sv.seen[top]
	rate := sv.tr.Window(now-c.cfg.Window, now).Rate
	if !m.set || now-m.at >= c.cfg.Remember || m.rate*futileLoad < rate || m.rate > rate*futileLoad || float64(m.pct) < 0.9*float64(st.Pct) {
		return "", false
	}
	return fmt.Sprintf("p%g %v at %s, and %v at %s %v ago at %.1f requests/s: restraining the offline jobs does not help it",
		sv.tr.Target().Percentile, roundMs(st.Pct), c.Rung(), roundMs(m.pct), c.cfg.Ladder[top], (now - m.at).Round(time.Second), m.rate), true
}

// futileLoad is how far a service's load may move and a futile climb
// still count as futile at it.
const futileLoad = 1.5

// giveUp ends a climb that does not help sv (why): the controller goes
// back to where sv's climb started, if it is above it (another service's
// climb stays), and leaves sv alone until its load changes or FutileFor
// passes.
func (c *Controller) giveUp(now time.Duration, sv *service, why string) (Decision, bool) {
	from := c.level
	if c.climb != nil && c.climb.id == sv.id {
		from = c.climb.from
	}
	sv.futileUntil, sv.futileRate = now+c.cfg.FutileFor, sv.tr.Window(now-c.cfg.Window, now).Rate
	sv.futileWhy = why
	sv.state, sv.detail = NotHeld, why
	if from == c.level {
		// Nothing climbed for it: its misses just now called for nothing.
		if c.climb != nil && c.climb.id == sv.id {
			c.climb = nil
		}
		return Decision{}, false
	}
	c.climb = nil
	c.badAt = -1 << 62
	// Its misses on the way up were not the offline jobs' doing.
	clear(c.fails[from:])
	return c.move(now, from, sv.id, "futile: "+sv.id+" "+why), true
}
