package webtest

import (
	"fmt"
	"slices"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// SetUsage sets what Usage answers and, for each job in it, what
// JobUsage answers now (its history grows by the sample).
func (f *FakeNode) SetUsage(v node.UsageView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage = v
	if f.history == nil {
		f.history = map[string][]node.UsageSample{}
	}
	for _, u := range v.Jobs {
		f.history[u.ID] = append(f.history[u.ID], node.UsageSample{At: u.At, UsedMemoryMiB: u.UsedMemoryMiB, Util: u.Util, SMUtil: u.SMUtil, MemUtil: u.MemUtil})
	}
}

// Usage returns what SetUsage set.
func (f *FakeNode) Usage() node.UsageView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.usage
	v.Jobs = slices.Clone(v.Jobs)
	if v.Jobs == nil {
		v.Jobs = []node.JobUsage{}
	}
	return v
}

// JobUsage returns a job's use in the last SetUsage and its samples.
func (f *FakeNode) JobUsage(id string) (node.JobUsageView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return node.JobUsageView{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	v := node.JobUsageView{History: slices.Clone(f.history[id])}
	if v.History == nil {
		v.History = []node.UsageSample{}
	}
	for _, u := range f.usage.Jobs {
		if u.ID == id {
			v.Usage = &u
		}
	}
	return v, nil
}
