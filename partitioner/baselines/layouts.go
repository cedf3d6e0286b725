package baselines

import (
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
)

// BaseProfiles are the profiles both baselines partition with: one per
// compute-slice count, the one with the fewest memory slices (on the
// A100-80GB 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb and 7g.80gb), whose
// maximal layouts are NVIDIA's table that MIGER's global_config_list
// and MISO's partition_code.json list.
func BaseProfiles(m *partitioner.Model) []*partitioner.Profile {
	var out []*partitioner.Profile
	for i := range m.Profiles {
		p := &m.Profiles[i]
		if p.MediaExtensions() {
			continue
		}
		k := slices.IndexFunc(out, func(q *partitioner.Profile) bool { return q.ComputeSlices == p.ComputeSlices })
		switch {
		case k < 0:
			out = append(out, p)
		case p.MemorySlices < out[k].MemorySlices:
			out[k] = p
		}
	}
	return out
}

// configs are the model's maximal layouts of the base profiles, one per
// multiset of profiles (the first in NVIDIA's order), as the baselines'
// tables list them; partitioner's cache, shared: not to be modified.
func configs(m *partitioner.Model) []partitioner.Layout {
	_, distinct := partitioner.MaximalLayoutsOf(m, BaseProfiles(m))
	return distinct
}

// holding returns a maximal layout of the base profiles with the same
// profiles as l that holds the instances keep where they are, or l's
// first concrete form when none does.
func holding(m *partitioner.Model, l partitioner.Layout, keep []partitioner.Instance) (partitioner.Layout, bool) {
	key := l.Profiles()
	all, _ := partitioner.MaximalLayoutsOf(m, BaseProfiles(m))
	for _, c := range all {
		if c.Profiles() != key {
			continue
		}
		ok := true
		for _, in := range keep {
			if !slices.ContainsFunc(c.Instances, func(x partitioner.Instance) bool { return x.String() == in.String() }) {
				ok = false
				break
			}
		}
		if ok {
			return c, true
		}
	}
	return l, false
}
