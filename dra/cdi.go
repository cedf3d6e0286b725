package dra

import (
	"fmt"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/mmkgpu/mmk/jobs"
)

// CDIClass is the class of the driver's CDI devices: mmk.dev/claim=UID is
// the device of one prepared claim.
const CDIClass = "claim"

// CDIKind is the vendor and class of the claim devices.
const CDIKind = DriverName + "/" + CDIClass

// cdiSpecs writes and removes the claims' CDI specs in one directory
// (the runtime's, /var/run/cdi), through the CDI library, which validates
// each spec before it writes it (atomically).
type cdiSpecs struct {
	cache *cdi.Cache
}

func newCDISpecs(dir string) (*cdiSpecs, error) {
	c, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("CDI spec directory %s: %w", dir, err)
	}
	return &cdiSpecs{cache: c}, nil
}

// specName is the file of a claim's spec: transient, named by its UID.
func specName(uid string) string {
	return cdi.GenerateTransientSpecName(DriverName, CDIClass, uid)
}

// write writes the spec of a claim's device: the grant's variables and
// its mounts, bound at the same paths. It returns the device's CDI id.
func (s *cdiSpecs) write(uid string, g jobs.Grant) (string, error) {
	edits := cdispec.ContainerEdits{Env: g.Env}
	for _, m := range g.Mounts {
		opt := "rw"
		if m.ReadOnly {
			opt = "ro"
		}
		edits.Mounts = append(edits.Mounts, &cdispec.Mount{HostPath: m.Path, ContainerPath: m.Path, Type: "bind", Options: []string{"rbind", opt}})
	}
	spec := &cdispec.Spec{
		Kind:    CDIKind,
		Devices: []cdispec.Device{{Name: uid, ContainerEdits: edits}},
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return "", fmt.Errorf("CDI spec of claim %s: %w", uid, err)
	}
	spec.Version = v
	if err := s.cache.WriteSpec(spec, specName(uid)); err != nil {
		return "", fmt.Errorf("CDI spec of claim %s: %w", uid, err)
	}
	return CDIKind + "=" + uid, nil
}

// remove removes a claim's spec; one that is gone already is no error.
func (s *cdiSpecs) remove(uid string) error {
	if err := s.cache.RemoveSpec(specName(uid)); err != nil {
		return fmt.Errorf("remove the CDI spec of claim %s: %w", uid, err)
	}
	return nil
}
