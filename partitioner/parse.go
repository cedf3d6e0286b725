package partitioner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseLayout reads a layout of model m from its text form: instances
// joined by "+", each a profile name with an optional "@start" placement,
// e.g. "3g.40gb@0+2g.20gb@4+1g.10gb@6". Profile names are case-insensitive.
// Instances without a placement are put at the first free placements that
// fit all of them, larger profiles first. Blank text is the empty layout.
//
// Errors quote the input and name the offending part.
func ParseLayout(m *Model, text string) (Layout, error) {
	if strings.TrimSpace(text) == "" {
		return Layout{Model: m}, nil
	}
	parts := splitParts(text)
	if len(parts) > ComputeSlices {
		return Layout{}, fmt.Errorf("layout %q: %d instances, but at most %d fit on a GPU", text, len(parts), ComputeSlices)
	}
	var placed []Instance
	var unplaced []*Profile
	for i, part := range parts {
		in, hasStart, err := parseInstance(m, part)
		if err != nil {
			return Layout{}, fmt.Errorf("layout %q: part %d %q: %w", text, i+1, part, err)
		}
		if hasStart {
			placed = append(placed, in)
		} else {
			unplaced = append(unplaced, in.Profile)
		}
	}
	l, err := NewLayout(m, placed)
	if err != nil {
		return Layout{}, fmt.Errorf("layout %q: %w", text, err)
	}
	if len(unplaced) == 0 {
		return l, nil
	}
	if err := checkTotals(append(slices.Clone(unplaced), profilesOf(l)...)); err != nil {
		return Layout{}, fmt.Errorf("layout %q: %w", text, err)
	}
	full, ok := placeRest(l, unplaced)
	if !ok {
		return Layout{}, fmt.Errorf("layout %q: no free placements fit %s beside %q", text, profileList(unplaced), l.String())
	}
	return full, nil
}

// splitParts splits layout text on "+", keeping the "+me" suffix of media
// extension profiles (e.g. "1g.10gb+me@3") with its profile.
func splitParts(text string) []string {
	raw := strings.Split(text, "+")
	parts := make([]string, 0, len(raw))
	for _, r := range raw {
		t := strings.TrimSpace(r)
		low := strings.ToLower(t)
		if len(parts) > 0 && (low == "me" || strings.HasPrefix(low, "me@")) {
			parts[len(parts)-1] += "+" + t
			continue
		}
		parts = append(parts, t)
	}
	return parts
}

func parseInstance(m *Model, part string) (Instance, bool, error) {
	if part == "" {
		return Instance{}, false, fmt.Errorf("empty instance")
	}
	name, startText, hasStart := strings.Cut(part, "@")
	p, err := m.Profile(strings.ToLower(strings.TrimSpace(name)))
	if err != nil {
		return Instance{}, false, err
	}
	if !hasStart {
		return Instance{Profile: p}, false, nil
	}
	start, err := strconv.Atoi(strings.TrimSpace(startText))
	if err != nil {
		return Instance{}, false, fmt.Errorf("placement %q is not a whole number", startText)
	}
	if !p.AllowedAt(start) {
		return Instance{}, false, fmt.Errorf("%s cannot start at memory slice %d (allowed: %s)", p.Name, start, joinInts(p.Placements))
	}
	return Instance{Profile: p, Start: start}, true, nil
}

// placeRest finds placements for profiles beside the instances of l,
// trying larger profiles first and lower placements first; it returns the
// first complete layout found. Instances of one profile are placed in
// ascending order, so the search never tries two orders of the same set.
func placeRest(l Layout, profiles []*Profile) (Layout, bool) {
	todo := slices.Clone(profiles)
	slices.SortStableFunc(todo, func(a, b *Profile) int { return b.MemorySlices - a.MemorySlices })
	var used uint16
	for _, in := range l.Instances {
		used |= in.mask()
	}
	chosen := slices.Clone(l.Instances)
	var search func(i, minStart int, used uint16) bool
	search = func(i, minStart int, used uint16) bool {
		if i == len(todo) {
			return true
		}
		p := todo[i]
		for _, start := range p.Placements {
			in := Instance{Profile: p, Start: start}
			if start < minStart || used&in.mask() != 0 {
				continue
			}
			chosen = append(chosen, in)
			next := 0
			if i+1 < len(todo) && todo[i+1] == p {
				next = start + 1
			}
			if search(i+1, next, used|in.mask()) {
				return true
			}
			chosen = chosen[:len(chosen)-1]
		}
		return false
	}
	if !search(0, 0, used) {
		return Layout{}, false
	}
	out, err := NewLayout(l.Model, chosen)
	return out, err == nil
}

// checkTotals enforces the per-profile counts and the compute slices of a
// set of instances before any is placed.
func checkTotals(ps []*Profile) error {
	compute := 0
	count := map[*Profile]int{}
	for _, p := range ps {
		compute += p.ComputeSlices
		count[p]++
		if count[p] > p.MaxCount {
			return fmt.Errorf("more than %d instances of %s", p.MaxCount, p.Name)
		}
	}
	if compute > ComputeSlices {
		return fmt.Errorf("layout uses %d compute slices, the GPU has %d", compute, ComputeSlices)
	}
	return nil
}

func profilesOf(l Layout) []*Profile {
	ps := make([]*Profile, len(l.Instances))
	for i, in := range l.Instances {
		ps[i] = in.Profile
	}
	return ps
}

func profileList(ps []*Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, "+")
}
