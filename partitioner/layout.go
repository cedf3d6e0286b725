package partitioner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Instance is one GPU instance of a layout: a profile placed at a memory slice.
type Instance struct {
	Profile *Profile
	Start   int
}

// End returns the memory slice just past the instance.
func (in Instance) End() int { return in.Start + in.Profile.MemorySlices }

// String returns the canonical text of the instance, e.g. "3g.40gb@4".
func (in Instance) String() string { return in.Profile.Name + "@" + strconv.Itoa(in.Start) }

// mask returns the memory slices the instance occupies as a bit set.
func (in Instance) mask() uint16 {
	return uint16((1<<in.Profile.MemorySlices)-1) << in.Start
}

// Layout is a set of GPU instances on one GPU, sorted by placement. The zero
// value of Instances (no instance) is the layout of a MIG-enabled GPU with
// nothing created. A Layout made by NewLayout, ParseLayout or the
// enumeration functions is valid for its model.
type Layout struct {
	Model     *Model
	Instances []Instance
}

// NewLayout checks instances against the model's rules and returns them as
// a layout sorted by placement. Errors name the offending instance.
func NewLayout(m *Model, instances []Instance) (Layout, error) {
	l := Layout{Model: m, Instances: slices.Clone(instances)}
	slices.SortStableFunc(l.Instances, func(a, b Instance) int { return a.Start - b.Start })
	if err := l.validate(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// validate enforces what the hardware enforces: profiles of the model,
// allowed placements, no shared memory slice, per-profile counts, and at
// most ComputeSlices compute slices. Instances must be sorted by start.
func (l Layout) validate() error {
	var used uint16
	compute := 0
	counts := map[*Profile]int{}
	for i, in := range l.Instances {
		if in.Profile == nil {
			return fmt.Errorf("instance %d has no profile", i+1)
		}
		if _, err := l.Model.Profile(in.Profile.Name); err != nil {
			return err
		}
		if !in.Profile.AllowedAt(in.Start) {
			return fmt.Errorf("%s cannot start at memory slice %d (allowed: %s)", in.Profile.Name, in.Start, joinInts(in.Profile.Placements))
		}
		if used&in.mask() != 0 {
			for _, prev := range l.Instances[:i] {
				if prev.mask()&in.mask() != 0 {
					return fmt.Errorf("%s overlaps %s", in, prev)
				}
			}
		}
		used |= in.mask()
		compute += in.Profile.ComputeSlices
		counts[in.Profile]++
		if counts[in.Profile] > in.Profile.MaxCount {
			return fmt.Errorf("%s: more than %d instances of %s", in, in.Profile.MaxCount, in.Profile.Name)
		}
	}
	if compute > ComputeSlices {
		return fmt.Errorf("layout uses %d compute slices, the GPU has %d", compute, ComputeSlices)
	}
	return nil
}

// String returns the canonical text of the layout: its instances in
// placement order joined by "+", e.g. "3g.40gb@0+2g.20gb@4+1g.10gb@6".
// The empty layout is the empty string.
func (l Layout) String() string {
	parts := make([]string, len(l.Instances))
	for i, in := range l.Instances {
		parts[i] = in.String()
	}
	return strings.Join(parts, "+")
}

// Profiles names the layout's instances by profile, sorted and joined
// with "+" ("1g.10gb+2g.20gb+3g.40gb"): layouts with the same profiles at
// other placements have the same name.
func (l Layout) Profiles() string {
	names := make([]string, len(l.Instances))
	for i, in := range l.Instances {
		names[i] = in.Profile.Name
	}
	slices.Sort(names)
	return strings.Join(names, "+")
}

// Equal reports whether two layouts hold the same instances.
func (l Layout) Equal(o Layout) bool {
	return slices.EqualFunc(l.Instances, o.Instances, func(a, b Instance) bool {
		return a.Start == b.Start && a.Profile.Name == b.Profile.Name
	})
}

// ComputeSlicesUsed returns the compute slices the layout's instances use.
func (l Layout) ComputeSlicesUsed() int {
	n := 0
	for _, in := range l.Instances {
		n += in.Profile.ComputeSlices
	}
	return n
}

// MemorySlicesUsed returns the memory slices the layout's instances use.
func (l Layout) MemorySlicesUsed() int {
	n := 0
	for _, in := range l.Instances {
		n += in.Profile.MemorySlices
	}
	return n
}

// layoutJSON is the wire form of a layout, shared by the CLI and the API.
type layoutJSON struct {
	Layout    string         `json:"layout"`
	Instances []instanceJSON `json:"instances"`
}

type instanceJSON struct {
	Profile string `json:"profile"`
	Start   int    `json:"start"`
	Size    int    `json:"size"`
}

// MarshalJSON writes {"layout": "<canonical text>", "instances":
// [{"profile": ..., "start": ..., "size": ...}]}.
func (l Layout) MarshalJSON() ([]byte, error) {
	out := layoutJSON{Layout: l.String(), Instances: make([]instanceJSON, len(l.Instances))}
	for i, in := range l.Instances {
		out.Instances[i] = instanceJSON{Profile: in.Profile.Name, Start: in.Start, Size: in.Profile.MemorySlices}
	}
	return json.Marshal(out)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}
