package webtest

import (
	"slices"
	"time"

	"github.com/mmkgpu/mmk/node"
)

// SetHealth sets what Health answers (its history whole).
func (f *FakeNode) SetHealth(v node.HealthView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = v
}

// Health returns what SetHealth set, each GPU's history cut to the
// samples after since, as the real node does.
func (f *FakeNode) Health(since time.Time) node.HealthView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.health
	v.GPUs = []node.GPUHealthView{}
	for _, g := range f.health.GPUs {
		g.History = slices.DeleteFunc(slices.Clone(g.History), func(s node.HealthSample) bool { return !s.At.After(since) })
		v.GPUs = append(v.GPUs, g)
	}
	return v
}
