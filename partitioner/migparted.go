package partitioner

// mig-parted's configuration format (NVIDIA/mig-parted, api/spec/v1), so
// that operators keep their MIG layouts in the files they already have:
//
//	version: v1
//	mig-configs:
//	  all-balanced:
//	    - device-filter: ["0x233010DE"]   # optional: PCI device ids
//	      devices: all                    # or a list of GPU indexes
//	      mig-enabled: true
//	      mig-devices:                    # profile: count
//	        "1g.10gb": 2
//	        "2g.20gb": 1
//	        "3g.40gb": 1
//
// The file is read through go.yaml.in/yaml/v3's node tree (the YAML
// library viper already brings into mmk), walked by hand so that every
// error names its line and an unknown field is an error, as mig-parted's
// own strict decoder makes it.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PartedVersion is the version of mig-parted's format mmk reads and writes.
const PartedVersion = "v1"

// PartedSpec is a mig-parted configuration file: named MIG configurations,
// in the file's order.
type PartedSpec struct {
	Version string
	Configs []PartedConfig
}

// PartedConfig is one named configuration: entries that each give a set
// of GPUs their MIG mode and instances.
type PartedConfig struct {
	Name    string
	Entries []PartedEntry
	// Line is where the name stands in the file (0 when not read from one).
	Line int
}

// PartedEntry is one entry of a configuration.
type PartedEntry struct {
	// DeviceFilter lists PCI device ids ("0x233010DE", optionally with a
	// subsystem ":0x..."); empty matches every GPU. FilterList says it was
	// written as a list rather than one string, so that it is written
	// back the same way.
	DeviceFilter []string
	FilterList   bool
	// AllDevices is "devices: all"; otherwise Devices lists GPU indexes.
	AllDevices bool
	Devices    []int
	MIGEnabled bool
	// MIGDevices counts the GPU instances of each profile, in the file's
	// order. HasMIGDevices says the field was written (mig-parted allows
	// "mig-devices: {}" beside "mig-enabled: false").
	MIGDevices    []ProfileCount
	HasMIGDevices bool
	Line          int
}

// ProfileCount is a number of GPU instances of one profile, as
// mig-parted writes it ("3g.40gb": 2).
type ProfileCount struct {
	Profile string
	Count   int
}

// Config returns the configuration with the given name.
func (s *PartedSpec) Config(name string) (*PartedConfig, error) {
	for i := range s.Configs {
		if s.Configs[i].Name == name {
			return &s.Configs[i], nil
		}
	}
	return nil, fmt.Errorf("no MIG configuration %q (the file has: %s)", name, strings.Join(s.Names(), ", "))
}

// Names lists the configurations' names in the file's order.
func (s *PartedSpec) Names() []string {
	out := make([]string, len(s.Configs))
	for i, c := range s.Configs {
		out[i] = c.Name
	}
	return out
}

// Select returns the named configuration, or the only one when name is
// empty.
func (s *PartedSpec) Select(name string) (*PartedConfig, error) {
	if name != "" {
		return s.Config(name)
	}
	if len(s.Configs) == 1 {
		return &s.Configs[0], nil
	}
	return nil, fmt.Errorf("the file has %d MIG configurations (%s): name one", len(s.Configs), strings.Join(s.Names(), ", "))
}

// maxPartedNodes bounds the YAML nodes a file may expand to (aliases
// included), so that a small file cannot make the reader walk forever.
const maxPartedNodes = 100000

// partedReader walks a parsed file, counting nodes.
type partedReader struct{ nodes int }

// ParseParted reads a mig-parted configuration file (YAML, or JSON, which
// is YAML). It checks what mig-parted checks: version v1; at least one
// configuration, each with at least one entry; devices ("all" or GPU
// indexes) and mig-enabled in every entry; mig-devices when MIG is
// enabled and none when it is not; profile names of mig-parted's form and
// counts of 0 or more; device filters that are PCI device ids. An unknown
// or repeated field is an error. Every error names its line.
func ParseParted(data []byte) (*PartedSpec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("mig-parted config: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("mig-parted config: the file is empty")
	}
	r := &partedReader{}
	return r.spec(doc.Content[0])
}

// partedError is an error at a line of the file.
func partedError(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("mig-parted config: line %d: %s", n.Line, fmt.Sprintf(format, args...))
}

// resolve follows an alias to its anchor and counts the node.
func (r *partedReader) resolve(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	r.nodes++
	if r.nodes > maxPartedNodes {
		return nil, partedError(n, "the file expands to more than %d YAML nodes", maxPartedNodes)
	}
	return n, nil
}

// fields walks a mapping's key/value pairs, refusing keys outside known
// and keys given twice.
func (r *partedReader) fields(n *yaml.Node, what string, known []string, each func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return partedError(n, "%s must be a mapping", what)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := r.resolve(n.Content[i])
		if err != nil {
			return err
		}
		v, err := r.resolve(n.Content[i+1])
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode {
			return partedError(k, "a key of %s must be a string", what)
		}
		if line, dup := seen[k.Value]; dup {
			return partedError(k, "field %q of %s is given twice (first on line %d)", k.Value, what, line)
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			return partedError(k, "unknown field %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
		}
		if err := each(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (r *partedReader) spec(n *yaml.Node) (*PartedSpec, error) {
	n, err := r.resolve(n)
	if err != nil {
		return nil, err
	}
	s := &PartedSpec{}
	var configs *yaml.Node
	err = r.fields(n, "the file", []string{"version", "mig-configs"}, func(key string, _, v *yaml.Node) error {
		if key == "version" {
			if v.Kind != yaml.ScalarNode || v.Value != PartedVersion {
				return partedError(v, "version %q: mmk reads mig-parted's version %s", v.Value, PartedVersion)
			}
			s.Version = v.Value
			return nil
		}
		configs = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.Version == "" {
		return nil, partedError(n, "the file has no version (want version: %s)", PartedVersion)
	}
	if configs == nil {
		return nil, partedError(n, "the file has no mig-configs")
	}
	err = r.fields(configs, "mig-configs", nil, func(name string, k, v *yaml.Node) error {
		c := PartedConfig{Name: name, Line: k.Line}
		if name == "" {
			return partedError(k, "a MIG configuration has an empty name")
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return partedError(v, "MIG configuration %q must be a list of at least one entry", name)
		}
		for _, en := range v.Content {
			e, err := r.entry(en, name)
			if err != nil {
				return err
			}
			c.Entries = append(c.Entries, e)
		}
		s.Configs = append(s.Configs, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s.Configs) == 0 {
		return nil, partedError(configs, "mig-configs must hold at least one configuration")
	}
	return s, nil
}

// entryFields are the fields of a configuration entry.
var entryFields = []string{"device-filter", "devices", "mig-enabled", "mig-devices"}

func (r *partedReader) entry(n *yaml.Node, config string) (PartedEntry, error) {
	n, err := r.resolve(n)
	if err != nil {
		return PartedEntry{}, err
	}
	e := PartedEntry{Line: n.Line}
	what := fmt.Sprintf("an entry of %q", config)
	var hasDevices, hasEnabled bool
	err = r.fields(n, what, entryFields, func(key string, _, v *yaml.Node) error {
		switch key {
		case "device-filter":
			return r.deviceFilter(v, &e)
		case "devices":
			hasDevices = true
			return r.devices(v, &e)
		case "mig-enabled":
			hasEnabled = true
			b, err := boolValue(v)
			if err != nil {
				return err
			}
			e.MIGEnabled = b
			return nil
		default:
			e.HasMIGDevices = true
			return r.migDevices(v, &e)
		}
	})
	if err != nil {
		return PartedEntry{}, err
	}
	switch {
	case !hasDevices:
		return PartedEntry{}, partedError(n, "%s has no devices (all, or a list of GPU indexes)", what)
	case !hasEnabled:
		return PartedEntry{}, partedError(n, "%s has no mig-enabled (true or false)", what)
	case e.MIGEnabled && !e.HasMIGDevices:
		return PartedEntry{}, partedError(n, "%s enables MIG but has no mig-devices (write mig-devices: {} for none)", what)
	case !e.MIGEnabled && len(e.MIGDevices) > 0:
		return PartedEntry{}, partedError(n, "%s lists mig-devices but has mig-enabled: false", what)
	}
	return e, nil
}

func boolValue(v *yaml.Node) (bool, error) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
		b, err := strconv.ParseBool(strings.ToLower(v.Value))
		if err == nil {
			return b, nil
		}
	}
	return false, partedError(v, "mig-enabled must be true or false (got %q)", v.Value)
}

// deviceIDPattern is a PCI device id as mig-parted writes them:
// 0xDDDDVVVV, optionally followed by the subsystem's ":0xDDDDVVVV".
var deviceIDPattern = regexp.MustCompile(`^0[xX][0-9a-fA-F]{1,8}(:0[xX][0-9a-fA-F]{1,8})?$`)

func (r *partedReader) deviceFilter(v *yaml.Node, e *PartedEntry) error {
	check := func(n *yaml.Node) error {
		if n.Kind != yaml.ScalarNode || !deviceIDPattern.MatchString(n.Value) {
			return partedError(n, "device-filter %q is not a PCI device id such as \"0x233010DE\"", n.Value)
		}
		e.DeviceFilter = append(e.DeviceFilter, n.Value)
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return check(v)
	case yaml.SequenceNode:
		e.FilterList = true
		for _, c := range v.Content {
			c, err := r.resolve(c)
			if err != nil {
				return err
			}
			if err := check(c); err != nil {
				return err
			}
		}
		return nil
	}
	return partedError(v, "device-filter must be a PCI device id or a list of them")
}

// maxGPUIndex bounds a GPU index in devices.
const maxGPUIndex = 1 << 16

func (r *partedReader) devices(v *yaml.Node, e *PartedEntry) error {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Value != "all" {
			return partedError(v, "devices %q: want all or a list of GPU indexes such as [0, 1]", v.Value)
		}
		e.AllDevices = true
		return nil
	case yaml.SequenceNode:
		e.Devices = []int{}
		for _, c := range v.Content {
			c, err := r.resolve(c)
			if err != nil {
				return err
			}
			i, err := strconv.Atoi(c.Value)
			if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!int" || err != nil || i < 0 || i > maxGPUIndex {
				return partedError(c, "devices: %q is not a GPU index (0 to %d)", c.Value, maxGPUIndex)
			}
			if slices.Contains(e.Devices, i) {
				return partedError(c, "devices: GPU %d is listed twice", i)
			}
			e.Devices = append(e.Devices, i)
		}
		return nil
	}
	return partedError(v, "devices must be all or a list of GPU indexes")
}

// partedProfilePattern is mig-parted's profile form: [Cc.]Gg.Mgb, then
// optional attributes after '+' or '-' ("1g.10gb+me", "1g.24gb+me.all",
// "1g.24gb-me").
var partedProfilePattern = regexp.MustCompile(`^([1-8]c\.)?[1-8]g\.[0-9]{1,4}gb([+-][A-Za-z][A-Za-z0-9.]*(,[A-Za-z][A-Za-z0-9.]*)*)?$`)

// maxPartedCount bounds one profile's count (a GPU holds at most 7).
const maxPartedCount = 64

func (r *partedReader) migDevices(v *yaml.Node, e *PartedEntry) error {
	e.MIGDevices = []ProfileCount{}
	return r.fields(v, "mig-devices", nil, func(profile string, k, c *yaml.Node) error {
		if !partedProfilePattern.MatchString(profile) {
			return partedError(k, "mig-devices: %q is not a MIG profile such as \"3g.40gb\" or \"1g.10gb+me\"", profile)
		}
		n, err := strconv.Atoi(c.Value)
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!int" || err != nil || n < 0 || n > maxPartedCount {
			return partedError(c, "mig-devices: the count of %s is %q, want 0 to %d", profile, c.Value, maxPartedCount)
		}
		e.MIGDevices = append(e.MIGDevices, ProfileCount{Profile: profile, Count: n})
		return nil
	})
}
