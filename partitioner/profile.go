package partitioner

import (
	"fmt"
	"slices"
	"strings"
)

// Hardware dimensions shared by every MIG-capable model mmk knows.
const (
	// ComputeSlices is the number of compute slices (GPC groups) of a GPU.
	ComputeSlices = 7
	// MemorySlices is the number of memory slices of a GPU; placements
	// are expressed in them.
	MemorySlices = 8
)

// Profile is one GPU instance profile of a GPU model, as NVML describes it.
type Profile struct {
	// Name is the profile's name without NVML's "MIG " prefix, e.g. "3g.40gb".
	Name string `json:"name"`
	// ID is the profile id that NVML reports and nvidia-smi's -cgi takes
	// (nvmlGpuInstanceProfileInfo_t.id), e.g. 9 for 3g.40gb.
	ID int `json:"id"`
	// NVMLIndex is the NVML_GPU_INSTANCE_PROFILE_* constant that selects
	// the profile in nvmlDeviceGetGpuInstanceProfileInfo.
	NVMLIndex int `json:"nvmlIndex"`
	// ComputeSlices is the number of compute slices the profile uses.
	ComputeSlices int `json:"computeSlices"`
	// MemorySlices is the number of memory slices the profile uses, which
	// is also the size of each of its placements.
	MemorySlices int `json:"memorySlices"`
	// MemoryMiB is the memory of one instance, in MiB.
	MemoryMiB int64 `json:"memoryMiB"`
	// SMs is the number of streaming multiprocessors of one instance.
	SMs int `json:"sms"`
	// MaxCount is the most instances of this profile one GPU can hold.
	MaxCount int `json:"maxCount"`
	// Placements lists the memory slices an instance may start at, ascending.
	Placements []int `json:"placements"`
}

// MediaExtensions reports whether the profile is a "+me" variant, which
// owns the GPU's media engines.
func (p *Profile) MediaExtensions() bool { return strings.HasSuffix(p.Name, "+me") }

// AllowedAt reports whether an instance of p may start at memory slice start.
func (p *Profile) AllowedAt(start int) bool { return slices.Contains(p.Placements, start) }

// Model is the MIG geometry of one GPU model.
type Model struct {
	// Key identifies the model in mmk, e.g. "H100-80GB".
	Key string `json:"key"`
	// MemoryMiB is the memory of the whole GPU as NVML reports it.
	MemoryMiB int64 `json:"memoryMiB"`
	// SMs is the number of SMs of the whole GPU with MIG disabled.
	SMs int `json:"sms"`
	// Profiles lists the GPU instance profiles, from smallest to largest
	// in the order nvidia-smi lists them.
	Profiles []Profile `json:"profiles"`
}

// Profile returns the model's profile with the given name, or an error that
// names the model and lists the valid names.
func (m *Model) Profile(name string) (*Profile, error) {
	for i := range m.Profiles {
		if m.Profiles[i].Name == name {
			return &m.Profiles[i], nil
		}
	}
	return nil, fmt.Errorf("no profile %q on %s (profiles: %s)", name, m.Key, strings.Join(m.ProfileNames(), ", "))
}

// ProfileNames lists the names of the model's profiles in table order.
func (m *Model) ProfileNames() []string {
	names := make([]string, len(m.Profiles))
	for i := range m.Profiles {
		names[i] = m.Profiles[i].Name
	}
	return names
}

// DefaultProfiles returns the names of the profiles mmk partitions with
// unless told otherwise: every profile except the "+me" variants, whose
// media engines deep-learning jobs do not use.
func (m *Model) DefaultProfiles() []string {
	var names []string
	for i := range m.Profiles {
		if !m.Profiles[i].MediaExtensions() {
			names = append(names, m.Profiles[i].Name)
		}
	}
	return names
}

// SelectProfiles resolves profile names to profiles of the model. An empty
// list selects DefaultProfiles. Unknown or repeated names are errors.
func (m *Model) SelectProfiles(names []string) ([]*Profile, error) {
	if len(names) == 0 {
		names = m.DefaultProfiles()
	}
	out := make([]*Profile, 0, len(names))
	for _, name := range names {
		p, err := m.Profile(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("profile %q given twice", p.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

// Diff compares two models' profile tables field by field and returns one
// line per difference; nil means they are equal. It is used to check the
// built-in tables against what NVML reports on a real GPU.
func (m *Model) Diff(other *Model) []string {
	var diffs []string
	for i := range m.Profiles {
		a := &m.Profiles[i]
		b, err := other.Profile(a.Name)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: only in %s", a.Name, m.Key))
			continue
		}
		diffs = append(diffs, a.diff(b)...)
	}
	for i := range other.Profiles {
		if _, err := m.Profile(other.Profiles[i].Name); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: only in %s", other.Profiles[i].Name, other.Key))
		}
	}
	return diffs
}

func (p *Profile) diff(q *Profile) []string {
	var diffs []string
	field := func(name string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			diffs = append(diffs, fmt.Sprintf("%s: %s %v != %v", p.Name, name, a, b))
		}
	}
	field("id", p.ID, q.ID)
	field("nvml index", p.NVMLIndex, q.NVMLIndex)
	field("compute slices", p.ComputeSlices, q.ComputeSlices)
	field("memory slices", p.MemorySlices, q.MemorySlices)
	field("memory MiB", p.MemoryMiB, q.MemoryMiB)
	field("SMs", p.SMs, q.SMs)
	field("max count", p.MaxCount, q.MaxCount)
	field("placements", p.Placements, q.Placements)
	return diffs
}
