package partitioner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// mpsConfig is MMK's MPSConfig for instance i of layout l holding jobs.
// Running online jobs keep their percentages (when FixOnlinePercent);
// the others are sorted by speed per SM share at their demand, online
// first, and each gets its demand while the instance's share lasts; what
// is left goes, a step at a time, to the offline job (or, unless online
// shares are kept, any job) whose speed it raises most. ok is false when
// a job gets no share.
func (d *decider) mpsConfig(l Layout, i int, jobs []Job, cur []Placed) ([]Placed, bool, error) {
	sms, gpuSMs := l.Instances[i].Profile.SMs, l.Model.SMs
	type want struct {
		job      Job
		demand   int
		perShare float64
		percent  int
		fixed    bool
		speedAt  func(int) (float64, error)
	}
	ws := make([]*want, 0, len(jobs))
	remaining := maxPercent
	for _, j := range jobs {
		w := &want{job: j}
		w.speedAt = func(p int) (float64, error) { return d.est.alone(j, sms, gpuSMs, p) }
		if d.opt.FixOnlinePercent && j.Online {
			if k := slices.IndexFunc(cur, func(p Placed) bool { return p.Job.ID == j.ID }); k >= 0 {
				w.fixed, w.percent = true, cur[k].Percent
				remaining -= w.percent
			}
		}
		if !w.fixed {
			full, err := w.speedAt(maxPercent)
			if err != nil {
				return nil, false, err
			}
			w.demand = maxPercent
			for p := PercentStep; p < maxPercent; p += PercentStep {
				s, err := w.speedAt(p)
				if err != nil {
					return nil, false, err
				}
				if s >= saturation*full {
					w.demand = p
					break
				}
			}
			s, err := w.speedAt(w.demand)
			if err != nil {
				return nil, false, err
			}
			w.perShare = s / float64(w.demand)
		}
		ws = append(ws, w)
	}
	order := slices.Clone(ws)
	slices.SortStableFunc(order, func(a, b *want) int {
		if a.job.Online != b.job.Online {
			if a.job.Online {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.perShare, a.perShare), strings.Compare(a.job.ID, b.job.ID))
	})
	for _, w := range order {
		if w.fixed {
			continue
		}
		w.percent = min(w.demand, remaining/PercentStep*PercentStep)
		if w.percent < PercentStep {
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
			now, err := w.speedAt(w.percent)
			if err != nil {
				return nil, false, err
			}
			next, err := w.speedAt(w.percent + PercentStep)
			if err != nil {
				return nil, false, err
			}
			if g := next - now; g > bestGain {
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
	out, err := d.speeds(l, i, out)
	return out, err == nil, err
}

// speeds fills in each placed job's estimated speed next to the others.
func (d *decider) speeds(l Layout, i int, placed []Placed) ([]Placed, error) {
	sms, gpuSMs := l.Instances[i].Profile.SMs, l.Model.SMs
	out := slices.Clone(placed)
	co := make([]Share, 0, len(placed))
	for k := range out {
		co = co[:0]
		for m, p := range placed {
			if m != k {
				co = append(co, Share{Job: p.Job, Percent: p.Percent})
			}
		}
		s, err := d.est.speed(out[k].Job, sms, gpuSMs, out[k].Percent, co)
		if err != nil {
			return nil, err
		}
		out[k].Speed = s
	}
	return out, nil
}

// Cache is an Estimator that remembers its answers: Algorithm 1 asks the
// same questions many times across candidate layouts, and a simulator
// across decisions. Decide wraps any other estimator in a fresh Cache per
// decision; pass a Cache to keep answers across decisions. It is not safe
// for concurrent use.
type Cache struct {
	est  Estimator
	solo map[aloneKey]float64
	co   map[string]float64
	key  strings.Builder
}

type aloneKey struct {
	typ                  string
	sms, gpuSMs, percent int
}

// NewCache wraps an estimator in a cache.
func NewCache(est Estimator) *Cache {
	if c, ok := est.(*Cache); ok {
		return c
	}
	return &Cache{est: est, solo: map[aloneKey]float64{}, co: map[string]float64{}}
}

// Speed answers from the cache or asks the estimator once.
func (m *Cache) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	return m.speed(j, sms, gpuSMs, percent, co)
}

// alone is the job's speed with no co-runner.
func (m *Cache) alone(j Job, sms, gpuSMs, percent int) (float64, error) {
	k := aloneKey{j.Type, sms, gpuSMs, percent}
	if s, ok := m.solo[k]; ok {
		return s, nil
	}
	s, err := m.est.Speed(j, sms, gpuSMs, percent, nil)
	if err != nil {
		return 0, fmt.Errorf("estimate %s (%s) at %d %% of %d SMs: %w", j.ID, j.Type, percent, sms, err)
	}
	m.solo[k] = s
	return s, nil
}

// speed is the job's speed next to co-runners; the cache key is the job's
// type and share and its co-runners' types and shares, in order.
func (m *Cache) speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	if len(co) == 0 {
		return m.alone(j, sms, gpuSMs, percent)
	}
	sorted := slices.Clone(co)
	slices.SortFunc(sorted, func(a, b Share) int {
		return cmp.Or(strings.Compare(a.Job.Type, b.Job.Type), cmp.Compare(a.Percent, b.Percent))
	})
	b := &m.key
	b.Reset()
	fmt.Fprintf(b, "%s@%d/%d/%d", j.Type, percent, sms, gpuSMs)
	for _, c := range sorted {
		b.WriteByte('+')
		b.WriteString(c.Job.Type)
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(c.Percent))
	}
	k := b.String()
	if s, ok := m.co[k]; ok {
		return s, nil
	}
	s, err := m.est.Speed(j, sms, gpuSMs, percent, sorted)
	if err != nil {
		return 0, fmt.Errorf("estimate %s (%s) at %d %% of %d SMs next to %d jobs: %w", j.ID, j.Type, percent, sms, len(co), err)
	}
	m.co[k] = s
	return s, nil
}

type cachedLayouts struct {
	model   *Model
	layouts []Layout
}

// layoutCache keeps each model's maximal layouts: enumerating them costs
// more than a decision.
var layoutCache = struct {
	sync.Mutex
	m map[string]cachedLayouts
}{m: map[string]cachedLayouts{}}
