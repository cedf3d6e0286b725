package partitioner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
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
// Running online jobs keep their percentages (when FixOnlinePercent);
// the others are sorted by speed per SM share at their demand, online
// first, and each gets its demand while the instance's share lasts; what
// is left goes, a step at a time, to the offline job (or, unless online
// shares are kept, any job) whose speed it raises most. ok is false when
// a job gets no share.
func (d *decider) mpsConfig(l Layout, i int, jobs []Job, cur []Placed) ([]Placed, bool, error) {
	sms, gpuSMs := l.Instances[i].Profile.SMs, l.Model.SMs
	ws := d.wants[:0]
	remaining := maxPercent
	for _, j := range jobs {
		c, err := d.est.curve(j, sms, gpuSMs)
		if err != nil {
			return nil, false, err
		}
		w := want{job: j, curve: c}
		if d.opt.FixOnlinePercent && j.Online {
			if k := slices.IndexFunc(cur, func(p Placed) bool { return p.Job.ID == j.ID }); k >= 0 {
				w.fixed, w.percent = true, cur[k].Percent
				remaining -= w.percent
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

// want is a job in MPSConfig: its speed curve and the share it gets.
type want struct {
	job     Job
	curve   *curve
	percent int
	fixed   bool // a running online job's share, kept
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

// Cache is an Estimator that remembers its answers: Algorithm 1 asks the
// same questions many times across candidate layouts, and a simulator
// across decisions. Decide wraps any other estimator in a fresh Cache per
// decision; pass a Cache to keep answers across decisions. It is not safe
// for concurrent use.
//
// Keys are built from small integers (job types are interned), so a hit
// costs one map lookup and no allocation.
type Cache struct {
	est    Estimator
	types  map[string]uint16
	curves map[curveKey]*curve
	co     map[string]float64
	key    []byte    // scratch: the key being looked up
	sorted []coShare // scratch: co-runners in key order
}

// coShare is a co-runner with its interned type.
type coShare struct {
	id uint16
	s  Share
}

// curveKey names a job type in an instance of sms SMs on a GPU of gpuSMs.
type curveKey struct {
	typ         string
	sms, gpuSMs int32
}

// curve is a job type's speed alone at every percentage in an instance,
// and what MPSConfig derives from it.
type curve struct {
	speed [maxPercent / PercentStep]float64 // at 10, 20, ..., 100 %
	// demand is the smallest percentage reaching saturation × speed at
	// 100 %; perShare is the speed there per percent.
	demand   int
	perShare float64
}

// at is the speed at percent, a multiple of PercentStep in 10..100.
func (c *curve) at(percent int) float64 { return c.speed[percent/PercentStep-1] }

// NewCache wraps an estimator in a cache.
func NewCache(est Estimator) *Cache {
	if c, ok := est.(*Cache); ok {
		return c
	}
	return &Cache{est: est, types: map[string]uint16{}, curves: map[curveKey]*curve{}, co: map[string]float64{}}
}

// Speed answers from the cache or asks the estimator once.
func (m *Cache) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	return m.speed(j, sms, gpuSMs, percent, co)
}

// typeID interns a job type.
func (m *Cache) typeID(t string) uint16 {
	id, ok := m.types[t]
	if !ok {
		id = uint16(len(m.types))
		m.types[t] = id
	}
	return id
}

// curve is the job's speed alone at each percentage in the instance.
func (m *Cache) curve(j Job, sms, gpuSMs int) (*curve, error) {
	k := curveKey{j.Type, int32(sms), int32(gpuSMs)}
	if c, ok := m.curves[k]; ok {
		return c, nil
	}
	c := &curve{}
	for i := range c.speed {
		p := (i + 1) * PercentStep
		s, err := m.est.Speed(j, sms, gpuSMs, p, nil)
		if err != nil {
			return nil, fmt.Errorf("estimate %s (%s) at %d %% of %d SMs: %w", j.ID, j.Type, p, sms, err)
		}
		c.speed[i] = s
	}
	c.demand = Demand(c.at)
	c.perShare = c.at(c.demand) / float64(c.demand)
	m.curves[k] = c
	return c, nil
}

// speed is the job's speed next to co-runners; the cache key is the job's
// type, share and instance and its co-runners' types and shares, sorted.
func (m *Cache) speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	if len(co) == 0 {
		if percent%PercentStep != 0 || percent < PercentStep || percent > maxPercent {
			return m.est.Speed(j, sms, gpuSMs, percent, nil)
		}
		c, err := m.curve(j, sms, gpuSMs)
		if err != nil {
			return 0, err
		}
		return c.at(percent), nil
	}
	ids := m.sorted[:0]
	for _, c := range co {
		ids = append(ids, coShare{m.typeID(c.Job.Type), c})
	}
	m.sorted = ids
	slices.SortFunc(ids, func(a, b coShare) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.s.Percent, b.s.Percent))
	})
	k := binary.AppendUvarint(m.key[:0], uint64(m.typeID(j.Type)))
	k = binary.AppendUvarint(k, uint64(percent))
	k = binary.AppendUvarint(k, uint64(sms))
	k = binary.AppendUvarint(k, uint64(gpuSMs))
	for _, c := range ids {
		k = binary.AppendUvarint(k, uint64(c.id))
		k = binary.AppendUvarint(k, uint64(c.s.Percent))
	}
	m.key = k
	if s, ok := m.co[string(k)]; ok {
		return s, nil
	}
	// The estimator sees co-runners by type name, whatever order types
	// were interned in, so that its answer does not depend on history.
	sorted := make([]Share, len(ids))
	for i, c := range ids {
		sorted[i] = c.s
	}
	slices.SortFunc(sorted, func(a, b Share) int {
		return cmp.Or(strings.Compare(a.Job.Type, b.Job.Type), cmp.Compare(a.Percent, b.Percent))
	})
	s, err := m.est.Speed(j, sms, gpuSMs, percent, sorted)
	if err != nil {
		return 0, fmt.Errorf("estimate %s (%s) at %d %% of %d SMs next to %d jobs: %w", j.ID, j.Type, percent, sms, len(co), err)
	}
	m.co[string(k)] = s
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
