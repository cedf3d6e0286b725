package partitioner

import (
	"bytes"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Marshal writes the spec in mig-parted's format: configurations and
// entries in order, each field as it was read (a device filter as a
// string or a list, mig-devices only where it was given), so that a file
// read and written back holds the same data.
func (s *PartedSpec) Marshal() ([]byte, error) {
	configs := mapping()
	for _, c := range s.Configs {
		entries := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range c.Entries {
			entries.Content = append(entries.Content, e.node())
		}
		configs.Content = append(configs.Content, str(c.Name), entries)
	}
	version := s.Version
	if version == "" {
		version = PartedVersion
	}
	root := mapping()
	root.Content = append(root.Content, str("version"), str(version), str("mig-configs"), configs)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, fmt.Errorf("write mig-parted config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write mig-parted config: %w", err)
	}
	return buf.Bytes(), nil
}

func (e PartedEntry) node() *yaml.Node {
	n := mapping()
	if len(e.DeviceFilter) > 0 {
		var f *yaml.Node
		if e.FilterList || len(e.DeviceFilter) > 1 {
			f = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, id := range e.DeviceFilter {
				f.Content = append(f.Content, quoted(id))
			}
		} else {
			f = quoted(e.DeviceFilter[0])
		}
		n.Content = append(n.Content, str("device-filter"), f)
	}
	var devices *yaml.Node
	if e.AllDevices {
		devices = str("all")
	} else {
		devices = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, d := range e.Devices {
			devices.Content = append(devices.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(d)})
		}
	}
	n.Content = append(n.Content, str("devices"), devices,
		str("mig-enabled"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(e.MIGEnabled)})
	if e.HasMIGDevices || e.MIGEnabled {
		md := mapping()
		if len(e.MIGDevices) == 0 {
			md.Style = yaml.FlowStyle
		}
		for _, pc := range e.MIGDevices {
			md.Content = append(md.Content, quoted(pc.Profile), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(pc.Count)})
		}
		n.Content = append(n.Content, str("mig-devices"), md)
	}
	return n
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// quoted is a string written in double quotes, as mig-parted's files
// write profiles and device ids.
func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}
