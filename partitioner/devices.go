package partitioner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Devices is b restricted to the GPUs an operator lets mmk manage
// (gpu.devices): each of devices names a GPU by its NVML index or its UUID
// (a comma inside one entry separates several). The others vanish from
// its inventory and every operation on them fails with ErrNotFound, so
// that nothing of mmk's (placement, MPS daemons, kernel schedulers, the
// API, the DRA driver's slices) touches them. Indices stay the NVML ones.
// No device at all is every GPU: b itself. A device the node does not
// have, or one named twice, is an error that names it.
func Devices(b Backend, devices []string) (Backend, error) {
	var names []string
	for _, d := range devices {
		for _, n := range strings.Split(d, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return b, nil
	}
	gpus, err := b.GPUs()
	if err != nil {
		return nil, fmt.Errorf("gpu.devices: list GPUs: %w", err)
	}
	keep := map[int]bool{}
	for _, n := range names {
		k := slices.IndexFunc(gpus, func(g GPU) bool { return strings.EqualFold(g.UUID, n) })
		if i, err := strconv.Atoi(n); err == nil {
			k = slices.IndexFunc(gpus, func(g GPU) bool { return g.Index == i })
		}
		if k < 0 {
			var have []string
			for _, g := range gpus {
				have = append(have, fmt.Sprintf("%d (%s)", g.Index, g.UUID))
			}
			return nil, fmt.Errorf("gpu.devices: %q is not a GPU of this node (it has %s)", n, strings.Join(have, ", "))
		}
		if keep[gpus[k].Index] {
			return nil, fmt.Errorf("gpu.devices: GPU %d is named twice (%q)", gpus[k].Index, n)
		}
		keep[gpus[k].Index] = true
	}
	m := &managed{Backend: b, keep: keep}
	u, reads := b.(UsageReader)
	h, checks := b.(HealthReader)
	switch {
	case reads && checks:
		return &managedReaders{managedUsage: managedUsage{managed: m, usage: u}, health: h}, nil
	case reads:
		return &managedUsage{managed: m, usage: u}, nil
	case checks:
		return &managedHealth{managed: m, health: h}, nil
	}
	return m, nil
}

// managed is a backend restricted to some of its GPUs (Devices).
type managed struct {
	Backend
	keep map[int]bool
}

// check fails for a GPU mmk does not manage.
func (m *managed) check(gpu int) error {
	if !m.keep[gpu] {
		return fmt.Errorf("GPU %d is not managed by mmk (gpu.devices): %w", gpu, ErrNotFound)
	}
	return nil
}

// GPUs lists the managed GPUs in index order.
func (m *managed) GPUs() ([]GPU, error) {
	gpus, err := m.Backend.GPUs()
	return slices.DeleteFunc(gpus, func(g GPU) bool { return !m.keep[g.Index] }), err
}

// Model is the managed GPU's geometry.
func (m *managed) Model(gpu int) (*Model, error) {
	if err := m.check(gpu); err != nil {
		return nil, err
	}
	return m.Backend.Model(gpu)
}

// Instances lists a managed GPU's GPU instances.
func (m *managed) Instances(gpu int) ([]GPUInstance, error) {
	if err := m.check(gpu); err != nil {
		return nil, err
	}
	return m.Backend.Instances(gpu)
}

// CreateGPUInstance creates a GPU instance on a managed GPU.
func (m *managed) CreateGPUInstance(gpu int, profile string, start int) (int, error) {
	if err := m.check(gpu); err != nil {
		return 0, err
	}
	return m.Backend.CreateGPUInstance(gpu, profile, start)
}

// CreateComputeInstance creates a compute instance on a managed GPU.
func (m *managed) CreateComputeInstance(gpu, gpuInstance int) (int, error) {
	if err := m.check(gpu); err != nil {
		return 0, err
	}
	return m.Backend.CreateComputeInstance(gpu, gpuInstance)
}

// DestroyComputeInstance destroys a compute instance on a managed GPU.
func (m *managed) DestroyComputeInstance(gpu, gpuInstance, computeInstance int) error {
	if err := m.check(gpu); err != nil {
		return err
	}
	return m.Backend.DestroyComputeInstance(gpu, gpuInstance, computeInstance)
}

// DestroyGPUInstance destroys a GPU instance on a managed GPU.
func (m *managed) DestroyGPUInstance(gpu, gpuInstance int) error {
	if err := m.check(gpu); err != nil {
		return err
	}
	return m.Backend.DestroyGPUInstance(gpu, gpuInstance)
}

// managedUsage is managed over a backend that reads usage: only the
// managed GPUs' devices are read back.
type managedUsage struct {
	*managed
	usage UsageReader
}

// Usage lists the managed GPUs' devices with their processes.
func (m *managedUsage) Usage() ([]DeviceUsage, error) {
	us, err := m.usage.Usage()
	return slices.DeleteFunc(us, func(u DeviceUsage) bool { return !m.keep[u.GPU] }), err
}

// managedReaders is managed over a backend that reads usage and health:
// only the managed GPUs' are read back.
type managedReaders struct {
	managedUsage
	health HealthReader
}

// Health reads the managed GPUs' health.
func (m *managedReaders) Health() ([]GPUHealth, error) { return keptHealth(m.managed, m.health) }

// managedHealth is managed for a backend that reads health and not
// usage.
type managedHealth struct {
	*managed
	health HealthReader
}

// Health reads the managed GPUs' health.
func (m *managedHealth) Health() ([]GPUHealth, error) { return keptHealth(m.managed, m.health) }

// keptHealth is h's health of the GPUs m manages.
func keptHealth(m *managed, h HealthReader) ([]GPUHealth, error) {
	hs, err := h.Health()
	return slices.DeleteFunc(hs, func(g GPUHealth) bool { return !m.keep[g.GPU] }), err
}
