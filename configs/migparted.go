package configs

import (
	"fmt"
	"os"

	"github.com/mmkgpu/mmk/partitioner"
)

// ReadParted reads a mig-parted configuration file (partitioner.ParseParted);
// errors name the file and the line.
func ReadParted(path string) (*partitioner.PartedSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mig-parted config: %w", err)
	}
	s, err := partitioner.ParseParted(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// validParted reads mig.parted_file and finds mig.parted_config in it.
func (m MIGConfig) validParted() error {
	if m.PartedFile == "" {
		if m.PartedConfig != "" {
			return &FieldError{Key: "mig.parted_config", Value: m.PartedConfig, Reason: "needs mig.parted_file"}
		}
		return nil
	}
	s, err := ReadParted(m.PartedFile)
	if err != nil {
		return &FieldError{Key: "mig.parted_file", Value: m.PartedFile, Reason: "cannot be read: " + err.Error()}
	}
	if _, err := s.Select(m.PartedConfig); err != nil {
		return &FieldError{Key: "mig.parted_config", Value: m.PartedConfig, Reason: "names no configuration of " + m.PartedFile + ": " + err.Error()}
	}
	return nil
}
