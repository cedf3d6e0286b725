package partitioner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

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

// curveKey names a job type, and its flags, in an instance of sms SMs on
// a GPU of gpuSMs.
type curveKey struct {
	typ         string
	flags       uint8
	sms, gpuSMs int32
}

// jobFlags is what besides its type an estimator may answer a job by:
// whether it is online, and whether it has a latency need (MinSpeed).
// Everything else of a job (its id, memory, the need's size, its load)
// must not change an answer: Cache keys answers by type and flags.
func jobFlags(j Job) uint8 {
	var f uint8
	if j.Online {
		f |= 1
	}
	if j.MinSpeed > 0 {
		f |= 2
	}
	return f
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

// KnowsLoad reports whether the cached estimator counts online
// co-runners' busy share itself (LoadAware).
func (m *Cache) KnowsLoad() bool {
	l, ok := m.est.(LoadAware)
	return ok && l.KnowsLoad()
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
	k := curveKey{j.Type, jobFlags(j), int32(sms), int32(gpuSMs)}
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
// type and flags (jobFlags), share and instance and its co-runners' types
// and shares, sorted.
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
	k = append(k, jobFlags(j))
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
