package partitioner

import (
	"cmp"
	"slices"
	"strings"
)

// Percentages MPSConfig hands out: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in
// steps of PercentStep, at least one step, at most 100.
const (
	PercentStep = 10
	maxPercent  = 100
)

// saturation is the share of its speed at 100 % at which a job's demand
// is met: its demand is the smallest percentage reaching it.
const saturation = 0.95

// Demand is MPSConfig's share for a job whose speed alone at a percentage
// is speedAt: the smallest step of PercentStep at which it reaches 95 % of
// its speed at 100 %.
func Demand(speedAt func(percent int) float64) int {
	full := speedAt(maxPercent)
	for p := PercentStep; p < maxPercent; p += PercentStep {
		if speedAt(p) >= saturation*full {
			return p
		}
	}
	return maxPercent
}

// mpsConfig is MMK's MPSConfig for instance i of layout l holding jobs.
// Running online jobs keep their percentages (when FixOnlinePercent,
// unless OnlineReclaim and below their demand; every running job under
// KeepRunning);
// the others are sorted by speed per SM share at their demand, online
// first, and each gets its demand while the instance's share lasts; what
// is left goes, a step at a time, to the offline job (or, unless online
// shares are kept, any job) whose speed it raises most. ok is false when
// a job gets no share (with FullDemand: less than its demand).
func (d *decider) mpsConfig(l Layout, i int, jobs []Job, cur []Placed) ([]Placed, bool, error) {
	if d.opt.PriorityShares {
		return d.priorityShares(l, i, jobs, cur)
	}
	sms, gpuSMs := l.Instances[i].Profile.SMs, l.Model.SMs
	ws := d.wants[:0]
	remaining := maxPercent
	for _, j := range jobs {
		c, err := d.est.curve(j, sms, gpuSMs)
		if err != nil {
			return nil, false, err
		}
		w := want{job: j, curve: c}
		if d.opt.KeepRunning || (d.opt.FixOnlinePercent && j.Online) || j.Pin != nil {
			if k := slices.IndexFunc(cur, func(p Placed) bool { return p.Job.ID == j.ID }); k >= 0 {
				// OnlineReclaim: an online job below its demand is shared
				// anew, online first, and so gets its demand back.
				if d.opt.KeepRunning || !d.opt.OnlineReclaim || cur[k].Percent >= c.demand {
					w.fixed, w.percent = true, cur[k].Percent
					remaining -= w.percent
				}
			}
		}
		ws = append(ws, w)
	}
	d.wants = ws
	order := d.order[:0]
	for k := range ws {
		order = append(order, &ws[k])
	}
	d.order = order
	slices.SortStableFunc(order, func(a, b *want) int {
		if a.job.Online != b.job.Online {
			if a.job.Online {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.curve.perShare, a.curve.perShare), strings.Compare(a.job.ID, b.job.ID))
	})
	for _, w := range order {
		if w.fixed {
			continue
		}
		w.percent = min(w.curve.demand, remaining/PercentStep*PercentStep)
		// Lines 28-32: a job's demand fits in what is left, or MPSConfig
		// stops (FullDemand); otherwise what is left, down to one step.
		if w.percent < PercentStep || (d.opt.FullDemand && w.percent < w.curve.demand) {
			return nil, false, nil
		}
		remaining -= w.percent
	}
	for remaining >= PercentStep {
		var best *want
		bestGain := 0.0
		for _, w := range order {
			// Online jobs whose share is kept get their demand only: the
			// rest stays free for offline jobs, which can be re-shared.
			if w.fixed || w.percent >= maxPercent || (d.opt.FixOnlinePercent && w.job.Online) {
				continue
			}
			if g := w.curve.at(w.percent+PercentStep) - w.curve.at(w.percent); g > bestGain {
				best, bestGain = w, g
			}
		}
		if best == nil {
			break
		}
		best.percent += PercentStep
		remaining -= PercentStep
	}
	out := make([]Placed, len(ws))
	for k, w := range ws {
		out[k] = Placed{Job: w.job, Instance: i, Percent: w.percent}
	}
	if err := d.fillSpeeds(l, i, out); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// priorityShares is MPSConfig under Options.PriorityShares: a running job
// keeps its percentage, a new one gets 100 %. Every job gets a share.
func (d *decider) priorityShares(l Layout, i int, jobs []Job, cur []Placed) ([]Placed, bool, error) {
	out := make([]Placed, len(jobs))
	for k, j := range jobs {
		out[k] = Placed{Job: j, Instance: i, Percent: maxPercent}
		if c := slices.IndexFunc(cur, func(p Placed) bool { return p.Job.ID == j.ID }); c >= 0 {
			out[k].Percent = cur[c].Percent
		}
	}
	if err := d.fillSpeeds(l, i, out); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// want is a job in MPSConfig: its speed curve and the share it gets.
type want struct {
	job     Job
	curve   *curve
	percent int
	fixed   bool // a running job's share, kept (FixOnlinePercent, KeepRunning, Pin)
}

// speeds returns placed with each job's estimated speed next to the others.
func (d *decider) speeds(l Layout, i int, placed []Placed) ([]Placed, error) {
	out := slices.Clone(placed)
	return out, d.fillSpeeds(l, i, out)
}

// fillSpeeds sets each placed job's estimated speed next to the others.
func (d *decider) fillSpeeds(l Layout, i int, placed []Placed) error {
	sms, gpuSMs := l.Instances[i].Profile.SMs, l.Model.SMs
	co := d.co[:0]
	for k := range placed {
		co = co[:0]
		for m, p := range placed {
			if m != k {
				co = append(co, Share{Job: p.Job, Percent: p.Percent})
			}
		}
		s, err := d.est.speed(placed[k].Job, sms, gpuSMs, placed[k].Percent, co)
		if err != nil {
			return err
		}
		placed[k].Speed = s
	}
	d.co = co
	return nil
}
