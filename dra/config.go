package dra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/slo"
)

// ConfigAPIVersion and ConfigKind name the driver's opaque configuration
// in a DeviceClass or a ResourceClaim.
const (
	ConfigAPIVersion = "mmk.dev/v1alpha1"
	ConfigKind       = "ClaimConfig"
)

// maxConfigBytes bounds one opaque configuration.
const maxConfigBytes = 64 << 10

// ClaimConfig is the driver's opaque configuration: the claim job's kind
// and what mmkd's job spec takes besides. A DeviceClass sets the kind
// (deployments/kubernetes: mmk-online, mmk-offline); a claim may add a
// workload hint and priorities. Later configurations override earlier
// ones field by field: the class's, then the claim's.
type ClaimConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Type is online (latency-critical: MPS client priority 0) or
	// offline (client priority 1).
	Type jobs.Kind `json:"type,omitempty"`
	// Priority is the kernel scheduler's 0-9; MPSPriority the MPS
	// client priority, 0 or 1 (default by type).
	Priority    *int           `json:"priority,omitempty"`
	MPSPriority *int           `json:"mpsPriority,omitempty"`
	Workload    *jobs.Workload `json:"workload,omitempty"`
	TaskKey     string         `json:"taskKey,omitempty"`
	// SLO is an online claim's latency target ("p99=25ms", "p99=1.5x":
	// jobs.Spec.SLO).
	SLO string `json:"slo,omitempty"`
}

// ParseConfig reads one opaque configuration strictly: known fields
// only, this apiVersion and kind.
func ParseConfig(raw []byte) (ClaimConfig, error) {
	var c ClaimConfig
	if len(raw) > maxConfigBytes {
		return c, fmt.Errorf("config: %d bytes, more than %d", len(raw), maxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return ClaimConfig{}, fmt.Errorf("config: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ClaimConfig{}, fmt.Errorf("config: more than one JSON value")
	}
	switch {
	case c.APIVersion != ConfigAPIVersion:
		return ClaimConfig{}, fmt.Errorf("config: apiVersion %q, want %s", c.APIVersion, ConfigAPIVersion)
	case c.Kind != ConfigKind:
		return ClaimConfig{}, fmt.Errorf("config: kind %q, want %s", c.Kind, ConfigKind)
	case c.Type != "" && c.Type != jobs.Online && c.Type != jobs.Offline:
		return ClaimConfig{}, fmt.Errorf("config: type %q is not online or offline", c.Type)
	}
	if c.SLO != "" {
		t, err := slo.Parse(c.SLO)
		if err != nil {
			return ClaimConfig{}, fmt.Errorf("config: slo: %w", err)
		}
		c.SLO = t.String() // the normal form, as jobs.Spec.Validate stores it
	}
	return c, nil
}

// merge lays o over c.
func (c *ClaimConfig) merge(o ClaimConfig) {
	if o.Type != "" {
		c.Type = o.Type
	}
	if o.Priority != nil {
		c.Priority = o.Priority
	}
	if o.MPSPriority != nil {
		c.MPSPriority = o.MPSPriority
	}
	if o.Workload != nil {
		c.Workload = o.Workload
	}
	if o.TaskKey != "" {
		c.TaskKey = o.TaskKey
	}
	if o.SLO != "" {
		c.SLO = o.SLO
	}
}

// claimConfig merges the driver's configurations of an allocation that
// apply to request: the class's first, then the claim's.
func claimConfig(configs []resourceapi.DeviceAllocationConfiguration, request string) (ClaimConfig, error) {
	out := ClaimConfig{Type: jobs.Offline}
	for _, src := range []resourceapi.AllocationConfigSource{resourceapi.AllocationConfigSourceClass, resourceapi.AllocationConfigSourceClaim} {
		for i, c := range configs {
			if c.Source != src || c.Opaque == nil || c.Opaque.Driver != DriverName || !appliesTo(c.Requests, request) {
				continue
			}
			cfg, err := ParseConfig(c.Opaque.Parameters.Raw)
			if err != nil {
				return ClaimConfig{}, fmt.Errorf("%s config %d: %w", src, i, err)
			}
			out.merge(cfg)
		}
	}
	return out, nil
}

// appliesTo reports a configuration for request: one that names no
// request applies to all, one that names a request to each of its
// subrequests too ("gpu" to "gpu/small").
func appliesTo(requests []string, request string) bool {
	return len(requests) == 0 || slices.Contains(requests, request) || slices.Contains(requests, resourceclaim.BaseRequestRef(request))
}
