package slo

import (
	"fmt"
	"slices"
	"time"
)

// A ratio target's bound is a multiple of the service's latency alone,
// which the controller measures: from requests that ran with no offline
// job beside them (Observe's alone), or in a probe, which holds the top
// rung for Settle and Probe. Only requests after the service's first
// WarmUp count: under mmkd on an H200 a probe that took a service's
// first 64 requests measured its p99 alone at 535 ms, against some 13 ms
// once warm (issue 52), and its bound was set to 802 ms.

// observeAlone keeps a request of sv as measured alone: one the caller
// saw alone, or one that arrived after a probe or a suspension (for an
// absolute target: a ratio target's bound is set by probes alone, not at
// whatever load called for a suspension) settled and after what queued
// before it drained, while every offline job was stopped; past sv's
// warm-up in each case.
func (c *Controller) observeAlone(sv *service, s Sample, alone bool) {
	if sv.requests <= c.cfg.WarmUp {
		return
	}
	arrived := s.At - s.Latency
	if (c.probing || c.Rung().Suspend && sv.tr.Target().Ratio == 0) && !c.unsuspended &&
		arrived > c.changedAt+c.cfg.Settle && arrived > c.suspendedAt+c.cfg.Settle && arrived > c.judgedFrom(sv) {
		alone = true
	}
	if !alone {
		return
	}
	if sv.tr.Target().Ratio == 0 && len(sv.alone) > 0 && s.At-sv.aloneAt >= c.cfg.Remember {
		sv.alone = sv.alone[:0] // from long ago: afresh
	}
	if len(sv.alone) >= Keep {
		sv.alone = sv.alone[1:]
	}
	sv.alone, sv.aloneAt = append(sv.alone, s.Latency), s.At
	c.calibrate(sv)
}

// startProbe holds the top rung for Settle and Probe for a service with
// a ratio target and no latency alone yet that is past its warm-up and
// busy enough to measure, at most once a ProbeEvery.
func (c *Controller) startProbe(now time.Duration) (Decision, bool) {
	if now-c.lastProbe < c.cfg.ProbeEvery || c.offline == 0 {
		return Decision{}, false
	}
	for _, sv := range c.services {
		t := sv.tr.Target()
		if t.Ratio == 0 || sv.tr.Bound() > 0 || sv.requests <= c.cfg.WarmUp || sv.tr.Window(now-c.cfg.Window, now).N < MinServiceTimes/2 {
			continue
		}
		top := len(c.cfg.Ladder) - 1
		c.probing, c.probeFrom, c.probeFor = true, c.level, sv.id
		d := c.move(now, top, sv.id, "")
		c.probeUntil, c.lastProbe = now+c.cfg.Settle+c.cfg.Probe, now
		d.Reason += fmt.Sprintf("probe: %s has a ratio target (%s) and no latency alone yet (%d of %d requests alone after its first %d); offline work held for %v",
			sv.id, t, len(sv.alone), c.cfg.MinAlone, c.cfg.WarmUp, c.cfg.Settle+c.cfg.Probe)
		return d, true
	}
	return Decision{}, false
}

// endProbe returns from a probe once its time is up.
func (c *Controller) endProbe(now time.Duration) (Decision, bool) {
	if now < c.probeUntil {
		return Decision{}, false
	}
	c.probing = false
	why := "probe over"
	if sv := c.service(c.probeFor); sv != nil {
		if b := sv.tr.Bound(); b > 0 {
			why = fmt.Sprintf("probe over: %s alone p%g %v over %d requests (after its first %d), bound %v", sv.id, sv.tr.Target().Percentile,
				roundMs(aloneAt(sv.alone, sv.tr.Target().Percentile)), len(sv.alone), c.cfg.WarmUp, roundMs(b))
		} else {
			why = fmt.Sprintf("probe over: %s ran %d of %d requests alone; its ratio target waits for the next probe", sv.id, len(sv.alone), c.cfg.MinAlone)
		}
	}
	return c.move(now, c.probeFrom, c.probeFor, why), true
}

// calibrate sets a ratio target's bound once enough requests ran alone.
func (c *Controller) calibrate(sv *service) {
	t := sv.tr.Target()
	if t.Ratio == 0 || len(sv.alone) < c.cfg.MinAlone {
		return
	}
	b, _ := t.Resolve(aloneAt(sv.alone, t.Percentile))
	sv.tr.SetBound(b)
}

// aloneAt is the latency alone at percentile p.
func aloneAt(v []time.Duration, p float64) time.Duration {
	return Quantile(slices.Sorted(slices.Values(v)), p)
}
