package partitioner

import (
	"cmp"
	"slices"
)

// candidate is one profile at one of its placements.
type candidate struct {
	in      Instance
	mask    uint16
	profile int // index into the selection, for counting
}

// enumerator walks every set of candidates that the hardware accepts. The
// candidates are ordered by placement, and a set is only extended with
// candidates after its last one, so each layout is produced exactly once.
type enumerator struct {
	model      *Model
	profiles   []*Profile
	candidates []candidate
	counts     []int
	chosen     []Instance
	out        []Layout
	maximal    bool
}

func newEnumerator(m *Model, profiles []*Profile, maximal bool) *enumerator {
	e := &enumerator{model: m, profiles: profiles, counts: make([]int, len(profiles)), maximal: maximal}
	for pi, p := range profiles {
		for _, start := range p.Placements {
			in := Instance{Profile: p, Start: start}
			e.candidates = append(e.candidates, candidate{in: in, mask: in.mask(), profile: pi})
		}
	}
	slices.SortStableFunc(e.candidates, func(a, b candidate) int { return a.in.Start - b.in.Start })
	return e
}

func (e *enumerator) fits(c candidate, used uint16, compute int) bool {
	return used&c.mask == 0 &&
		compute+c.in.Profile.ComputeSlices <= ComputeSlices &&
		e.counts[c.profile] < c.in.Profile.MaxCount
}

func (e *enumerator) walk(next int, used uint16, compute int) {
	for i := next; i < len(e.candidates); i++ {
		c := e.candidates[i]
		if !e.fits(c, used, compute) {
			continue
		}
		e.chosen = append(e.chosen, c.in)
		e.counts[c.profile]++
		u, k := used|c.mask, compute+c.in.Profile.ComputeSlices
		if !e.maximal || e.isMaximal(u, k) {
			e.out = append(e.out, Layout{Model: e.model, Instances: slices.Clone(e.chosen)})
		}
		e.walk(i+1, u, k)
		e.counts[c.profile]--
		e.chosen = e.chosen[:len(e.chosen)-1]
	}
}

// isMaximal reports whether no candidate, at any placement, still fits.
func (e *enumerator) isMaximal(used uint16, compute int) bool {
	for _, c := range e.candidates {
		if e.fits(c, used, compute) {
			return false
		}
	}
	return true
}

// Layouts returns every valid non-empty layout of the model that uses only
// the given profiles (nil: DefaultProfiles), as concrete placements, in
// the order of SortLayouts.
func (m *Model) Layouts(profiles []*Profile) []Layout {
	return m.enumerate(profiles, false)
}

// MaximalLayouts returns the valid layouts to which no instance of the
// given profiles (nil: DefaultProfiles) can be added, in the order of
// SortLayouts. For the A100 with its five base profiles these are NVIDIA's
// 19 published configurations.
func (m *Model) MaximalLayouts(profiles []*Profile) []Layout {
	return m.enumerate(profiles, true)
}

func (m *Model) enumerate(profiles []*Profile, maximal bool) []Layout {
	if profiles == nil {
		profiles, _ = m.SelectProfiles(nil) // the defaults always resolve
	}
	e := newEnumerator(m, profiles, maximal)
	e.walk(0, 0, 0)
	SortLayouts(e.out)
	return e.out
}

// SortLayouts orders layouts as NVIDIA's tables do: fewer instances first,
// then instance by instance from memory slice 0, larger profiles first.
func SortLayouts(ls []Layout) {
	slices.SortStableFunc(ls, func(a, b Layout) int {
		if c := cmp.Compare(len(a.Instances), len(b.Instances)); c != 0 {
			return c
		}
		for i := range a.Instances {
			x, y := a.Instances[i], b.Instances[i]
			if c := cmp.Compare(x.Start, y.Start); c != 0 {
				return c
			}
			if c := cmp.Compare(y.Profile.ComputeSlices, x.Profile.ComputeSlices); c != 0 {
				return c
			}
			if c := cmp.Compare(y.Profile.MemorySlices, x.Profile.MemorySlices); c != 0 {
				return c
			}
		}
		return 0
	})
}
