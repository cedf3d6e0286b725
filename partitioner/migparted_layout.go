package partitioner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// partedDeviceModels maps the PCI device ids that mig-parted's published
// configurations (deployments/systemd/config-default.yaml) group under
// each geometry to mmk's model of that geometry: a device filter matches
// a GPU when one of its ids is of the GPU's model. The A800 and H800
// variants share their A100 and H100 counterparts' profiles.
var partedDeviceModels = map[uint32]string{
	0x20B010DE: "A100-40GB", 0x20B110DE: "A100-40GB", 0x20F110DE: "A100-40GB", 0x20F610DE: "A100-40GB",
	0x20B210DE: "A100-80GB", 0x20B510DE: "A100-80GB", 0x20F310DE: "A100-80GB", 0x20F510DE: "A100-80GB",
	0x233010DE: "H100-80GB", 0x233110DE: "H100-80GB", 0x232210DE: "H100-80GB", 0x232410DE: "H100-80GB",
	0x233510DE: "H200-141GB", 0x233B10DE: "H200-141GB",
}

// partedModel is the model of a device filter's id ("" when mmk has none).
func partedModel(id string) string {
	primary, _, _ := strings.Cut(id, ":")
	v, err := strconv.ParseUint(primary, 0, 32)
	if err != nil {
		return ""
	}
	return partedDeviceModels[uint32(v)]
}

// Matches reports whether the entry applies to GPU gpu of the given model
// key: its devices name the GPU and its device filter, if any, names an id
// of that model.
func (e *PartedEntry) Matches(gpu int, model string) bool {
	if !e.AllDevices && !slices.Contains(e.Devices, gpu) {
		return false
	}
	if len(e.DeviceFilter) == 0 {
		return true
	}
	return model != "" && slices.ContainsFunc(e.DeviceFilter, func(id string) bool { return partedModel(id) == model })
}

// For returns the entry of the configuration that applies to GPU gpu of
// the given model key, or nil when none does. Two entries that both apply
// are an error naming their lines.
func (c *PartedConfig) For(gpu int, model string) (*PartedEntry, error) {
	var found *PartedEntry
	for i := range c.Entries {
		e := &c.Entries[i]
		if !e.Matches(gpu, model) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("MIG configuration %q: the entries on lines %d and %d both apply to GPU %d", c.Name, found.Line, e.Line, gpu)
		}
		found = e
	}
	return found, nil
}

// Layout is the entry's instances on a GPU of model m, each at the first
// placement that fits, larger profiles first (mig-parted's files give no
// placements). The profiles must be m's, each a whole GPU instance
// ("3g.40gb", or "3c.3g.40gb"): mmk makes one compute instance spanning
// each GPU instance.
func (e *PartedEntry) Layout(m *Model) (Layout, error) {
	var parts []string
	for _, pc := range e.MIGDevices {
		name, err := mmkProfileName(pc.Profile)
		if err != nil {
			return Layout{}, fmt.Errorf("entry on line %d: %w", e.Line, err)
		}
		if _, err := m.Profile(name); err != nil {
			return Layout{}, fmt.Errorf("entry on line %d: %w", e.Line, err)
		}
		for range pc.Count {
			parts = append(parts, name)
		}
	}
	if len(parts) > ComputeSlices {
		return Layout{}, fmt.Errorf("entry on line %d: %d GPU instances, but at most %d fit on a GPU", e.Line, len(parts), ComputeSlices)
	}
	l, err := ParseLayout(m, strings.Join(parts, "+"))
	if err != nil {
		return Layout{}, fmt.Errorf("entry on line %d: %w", e.Line, err)
	}
	return l, nil
}

// mmkProfileName turns mig-parted's profile form into mmk's profile name:
// "3c.3g.40gb" is "3g.40gb"; a compute instance smaller than its GPU
// instance is refused.
func mmkProfileName(p string) (string, error) {
	c, rest, ok := strings.Cut(p, ".")
	if !ok || !strings.HasSuffix(c, "c") {
		return p, nil
	}
	g, _, _ := strings.Cut(rest, ".")
	if strings.TrimSuffix(c, "c") != strings.TrimSuffix(g, "g") {
		return "", fmt.Errorf("profile %s: mmk makes one compute instance spanning each GPU instance (write %s)", p, rest)
	}
	return rest, nil
}

// GPULayout is one GPU's MIG state as PartedConfigOf exports it.
type GPULayout struct {
	Index int
	MIG   bool
	// Layout is the GPU's instances (with MIG).
	Layout Layout
}

// PartedConfigOf writes GPUs' layouts as one mig-parted configuration:
// GPUs with the same MIG mode and instances share an entry ("devices:
// all" when every GPU does), profiles largest first.
func PartedConfigOf(name string, gpus []GPULayout) PartedConfig {
	c := PartedConfig{Name: name}
	for _, g := range gpus {
		e := PartedEntry{MIGEnabled: g.MIG, HasMIGDevices: g.MIG, Devices: []int{g.Index}}
		if g.MIG {
			e.MIGDevices = profileCounts(g.Layout)
		}
		i := slices.IndexFunc(c.Entries, func(x PartedEntry) bool {
			return x.MIGEnabled == e.MIGEnabled && slices.Equal(x.MIGDevices, e.MIGDevices)
		})
		if i < 0 {
			c.Entries = append(c.Entries, e)
			continue
		}
		c.Entries[i].Devices = append(c.Entries[i].Devices, g.Index)
	}
	if len(c.Entries) == 1 {
		c.Entries[0].AllDevices, c.Entries[0].Devices = true, nil
	}
	return c
}

// profileCounts counts a layout's instances by profile, the model's
// largest profile first.
func profileCounts(l Layout) []ProfileCount {
	out := []ProfileCount{}
	if l.Model == nil {
		return out
	}
	for i := len(l.Model.Profiles) - 1; i >= 0; i-- {
		name := l.Model.Profiles[i].Name
		n := 0
		for _, in := range l.Instances {
			if in.Profile.Name == name {
				n++
			}
		}
		if n > 0 {
			out = append(out, ProfileCount{Profile: name, Count: n})
		}
	}
	return out
}
