package partitioner

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// searchLayout tries every layout of the GPU's model for the GPU's jobs
// plus the waiting ones, greedily as in placeBest, and adopts the best if
// it beats the current state by MinGain. It returns the jobs still waiting.
func (d *decider) searchLayout(g *GPUPlan, waiting []Job) ([]Job, error) {
	m := g.Layout.Model
	profiles, err := m.SelectProfiles(d.opt.Profiles)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(g.Jobs)+len(waiting))
	for _, p := range g.Jobs {
		jobs = append(jobs, p.Job)
	}
	for _, w := range waiting {
		// A pinned job waits for its own instance, on another GPU.
		if w.Pin == nil {
			jobs = append(jobs, w)
		}
	}
	if !d.opt.ArrivalOrder {
		jobs = byMemory(jobs)
	}
	if len(jobs) == 0 {
		return waiting, nil
	}
	bestTotal := g.Total() * (1 + d.opt.MinGain)
	var best *GPUPlan
	var bestLeft []Job
	curKey := g.Layout.Profiles()
	for _, l := range layoutsFor(m, profiles) {
		if l.Profiles() == curKey {
			l = g.Layout // the same instances where they already are
		}
		cand := []GPUPlan{{Layout: l}}
		left, err := d.placeAll(cand, jobs)
		if err != nil {
			return nil, err
		}
		// Jobs already on the GPU must keep a place.
		if slices.ContainsFunc(left, func(j Job) bool {
			return slices.ContainsFunc(g.Jobs, func(p Placed) bool { return p.Job.ID == j.ID })
		}) {
			continue
		}
		if t := cand[0].Total(); t > bestTotal {
			bestTotal, best, bestLeft = t, &cand[0], left
		}
	}
	if best == nil {
		return waiting, nil
	}
	*g = *best
	// What still waits keeps its arrival order.
	return slices.DeleteFunc(slices.Clone(waiting), func(w Job) bool {
		return !slices.ContainsFunc(bestLeft, func(j Job) bool { return j.ID == w.ID })
	}), nil
}

// layoutsFor lists the layouts the search tries, cached per model and
// profile set: the maximal ones (see the package documentation), one per
// multiset of profiles (layouts with the same instances at other
// placements predict the same speeds), without those another layout
// dominates (as many instances, each at least as large).
func layoutsFor(m *Model, profiles []*Profile) []Layout {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	key := m.Key + "|" + strings.Join(names, ",") + "|" + strconv.Itoa(len(m.Profiles))
	layoutCache.Lock()
	defer layoutCache.Unlock()
	if ls, ok := layoutCache.m[key]; ok && ls.model == m {
		return ls.layouts
	}
	seen := map[string]bool{}
	var distinct []Layout
	for _, l := range m.MaximalLayouts(profiles) {
		if k := l.Profiles(); !seen[k] {
			seen[k] = true
			distinct = append(distinct, l)
		}
	}
	var ls []Layout
	for i, a := range distinct {
		if !slices.ContainsFunc(distinct, func(b Layout) bool { return !b.Equal(distinct[i]) && dominates(b, a) && !dominates(a, b) }) {
			ls = append(ls, a)
		}
	}
	layoutCache.m[key] = cachedLayouts{model: m, layouts: ls}
	return ls
}

// dominates reports whether layout b has as many instances as a and can
// give each of a's instances its own instance at least as large in SMs
// and memory (a and b have different profiles).
func dominates(b, a Layout) bool {
	if len(a.Instances) != len(b.Instances) {
		return false
	}
	used := make([]bool, len(b.Instances))
	var match func(k int) bool
	match = func(k int) bool {
		if k == len(a.Instances) {
			return true
		}
		pa := a.Instances[k].Profile
		for j, in := range b.Instances {
			if !used[j] && in.Profile.SMs >= pa.SMs && in.Profile.MemoryMiB >= pa.MemoryMiB {
				used[j] = true
				if match(k + 1) {
					return true
				}
				used[j] = false
			}
		}
		return false
	}
	return match(0)
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
