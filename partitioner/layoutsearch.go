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
//
// With keepOnline (MIGKeepOnline on a GPU where online jobs run) only
// layouts that hold every online job's instance, same profile at the
// same placement, are tried, the online jobs stay in them at their
// percentages, and a candidate that would change one is dropped.
func (d *decider) searchLayout(g *GPUPlan, gi int, waiting []Job, keepOnline bool) ([]Job, error) {
	m := g.Layout.Model
	profiles, err := m.SelectProfiles(d.opt.Profiles)
	if err != nil {
		return nil, err
	}
	var online []Placed
	jobs := make([]Job, 0, len(g.Jobs)+len(waiting))
	for _, p := range g.Jobs {
		if keepOnline && p.Job.Online {
			online = append(online, p)
			continue
		}
		jobs = append(jobs, p.Job)
	}
	var elsewhere []Job
	for _, w := range waiting {
		// A pinned job waits for its own instance, on another GPU; a job
		// that avoids this GPU waits for another.
		if w.Pin == nil && !slices.Contains(w.Avoid, gi) {
			// Its GPUs to avoid are other GPUs: the candidates below
			// are this one, as GPU 0 of a list of one.
			w.Avoid = nil
			jobs = append(jobs, w)
		} else {
			elsewhere = append(elsewhere, w)
		}
	}
	jobs = d.placeOrder(jobs)
	if len(jobs) == 0 {
		return waiting, nil
	}
	candidates := layoutsFor(m, profiles)
	if keepOnline {
		candidates = keepingLayouts(m, profiles, g, online)
	}
	bestTotal := g.Total() * (1 + d.opt.MinGain)
	var best *GPUPlan
	var bestLeft []Job
	curKey := g.Layout.Profiles()
	for _, l := range candidates {
		if l.Profiles() == curKey {
			l = g.Layout // the same instances where they already are
		}
		cand := []GPUPlan{{Layout: l}}
		if keepOnline {
			ok, err := d.preplace(&cand[0], g, online)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
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
		if keepOnline && !keepsShares(cand[0], g, online) {
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
	// What still waits keeps its arrival order: the jobs placed leave it,
	// those waiting for another GPU stay.
	return slices.DeleteFunc(slices.Clone(waiting), func(w Job) bool {
		return !slices.ContainsFunc(bestLeft, func(j Job) bool { return j.ID == w.ID }) &&
			!slices.ContainsFunc(elsewhere, func(j Job) bool { return j.ID == w.ID })
	}), nil
}

// keepingLayouts are the maximal layouts that hold the instances of g's
// online jobs where they are, one per multiset of profiles (g's own
// layout standing for its multiset).
func keepingLayouts(m *Model, profiles []*Profile, g *GPUPlan, online []Placed) []Layout {
	need := make([]string, 0, len(online))
	for _, p := range online {
		need = append(need, g.Layout.Instances[p.Instance].String())
	}
	holds := func(l Layout) bool {
		for _, n := range need {
			if !slices.ContainsFunc(l.Instances, func(in Instance) bool { return in.String() == n }) {
				return false
			}
		}
		return true
	}
	seen := map[string]bool{g.Layout.Profiles(): true}
	out := []Layout{g.Layout}
	maximal, _ := MaximalLayoutsOf(m, profiles)
	for _, l := range maximal {
		if k := l.Profiles(); !seen[k] && holds(l) {
			seen[k] = true
			out = append(out, l)
		}
	}
	return out
}

// preplace puts g's online jobs into cand's instances that match theirs,
// at their percentages, with their speeds there.
func (d *decider) preplace(cand *GPUPlan, g *GPUPlan, online []Placed) (bool, error) {
	var touched []int
	for _, p := range online {
		name := g.Layout.Instances[p.Instance].String()
		i := slices.IndexFunc(cand.Layout.Instances, func(in Instance) bool { return in.String() == name })
		if i < 0 {
			return false, nil
		}
		p.Instance = i
		cand.Jobs = append(cand.Jobs, p)
		touched = append(touched, i)
	}
	for _, i := range touched {
		now, err := d.speeds(cand.Layout, i, inInstance(cand, i))
		if err != nil {
			return false, err
		}
		replaceInstance(cand, i, now)
	}
	return true, nil
}

// keepsShares reports whether every online job of g is in cand at its
// percentage.
func keepsShares(cand GPUPlan, g *GPUPlan, online []Placed) bool {
	for _, p := range online {
		k := slices.IndexFunc(cand.Jobs, func(q Placed) bool { return q.Job.ID == p.Job.ID })
		if k < 0 || cand.Jobs[k].Percent != p.Percent || cand.Layout.Instances[cand.Jobs[k].Instance].String() != g.Layout.Instances[p.Instance].String() {
			return false
		}
	}
	return true
}

// layoutsFor lists the layouts the search tries, cached per model and
// profile set: the maximal ones (see the package documentation), one per
// multiset of profiles (layouts with the same instances at other
// placements predict the same speeds), without those another layout
// dominates (as many instances, each at least as large).
func layoutsFor(m *Model, profiles []*Profile) []Layout {
	return cachedFor(m, profiles).layouts
}

// MaximalLayoutsOf is m.MaximalLayouts(profiles) (profiles as
// SelectProfiles returns them), cached per model and profile set: all the
// maximal layouts, and distinct, one per multiset of profiles (the first
// in all's order). Both slices and their layouts are shared by every
// caller: callers must not modify them.
func MaximalLayoutsOf(m *Model, profiles []*Profile) (all, distinct []Layout) {
	c := cachedFor(m, profiles)
	return c.maximal, c.distinct
}

func cachedFor(m *Model, profiles []*Profile) cachedLayouts {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	key := m.Key + "|" + strings.Join(names, ",") + "|" + strconv.Itoa(len(m.Profiles))
	layoutCache.Lock()
	defer layoutCache.Unlock()
	if ls, ok := layoutCache.m[key]; ok && ls.model == m {
		return ls
	}
	maximal := m.MaximalLayouts(profiles)
	seen := map[string]bool{}
	var distinct []Layout
	for _, l := range maximal {
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
	c := cachedLayouts{model: m, layouts: ls, maximal: maximal, distinct: distinct}
	layoutCache.m[key] = c
	return c
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
	model    *Model
	layouts  []Layout
	maximal  []Layout
	distinct []Layout
}

// layoutCache keeps each model's maximal layouts: enumerating them costs
// more than a decision.
var layoutCache = struct {
	sync.Mutex
	m map[string]cachedLayouts
}{m: map[string]cachedLayouts{}}
