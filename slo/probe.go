package slo

import (
	"fmt"
	"slices"
	"time"
)

// needsProbe is a service with a ratio target and no latency alone that
// is busy enough to measure, when probing is allowed.
func (c *Controller) needsProbe(now time.Duration) *service {
	if now-c.lastProbe < c.cfg.ProbeEvery {
		return nil
	}
	for _, sv := range c.services {
		t := sv.tr.Target()
		// A ratio target without a bound, or an absolute one found out of
		// reach alone on requests older than Remember (is it still?).
		stale := t.Ratio == 0 && sv.aloneLate > 0 && now-sv.aloneAt >= c.cfg.Remember
		if (t.Ratio == 0 || sv.tr.Bound() > 0) && !stale {
			continue
		}
		if sv.tr.Window(now-c.cfg.Window, now).N >= c.cfg.MinSamples {
			return sv
		}
	}
	return nil
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
			why = fmt.Sprintf("probe over: %s alone p%g %v over %d requests, bound %v", sv.id, sv.tr.Target().Percentile,
				roundMs(aloneAt(sv.alone, sv.tr.Target().Percentile)), len(sv.alone), b)
		} else {
			why = fmt.Sprintf("probe over: %s ran %d of %d requests alone; its ratio target waits for the next probe",
				sv.id, len(sv.alone), c.cfg.MinAlone)
		}
	}
	d := c.move(now, c.probeFrom, c.probeFor, why)
	c.lastDown = false // a return from a probe is no step down
	return d, true
}

// calibrate sets a ratio target's bound once enough requests ran alone.
func (c *Controller) calibrate(sv *service) {
	t := sv.tr.Target()
	if t.IsZero() || len(sv.alone) < c.cfg.MinAlone {
		return
	}
	if t.Ratio != 0 {
		a := aloneAt(sv.alone, t.Percentile)
		b, _ := t.Resolve(a)
		sv.tr.SetBound(b)
	}
}

// aloneAt is the latency alone at percentile p.
func aloneAt(v []time.Duration, p float64) time.Duration {
	s := slices.Clone(v)
	slices.Sort(s)
	return Quantile(s, p)
}
