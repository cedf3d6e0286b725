package webtest

import (
	"fmt"
	"slices"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// SetSLO sets what SLO answers and, per job, what JobSLO answers (its
// history grows by a point per call, from the job's view).
func (f *FakeNode) SetSLO(v node.SLOView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slo = v
	if f.sloHistory == nil {
		f.sloHistory = map[string][]node.SLOPoint{}
	}
	for _, j := range v.Jobs {
		f.sloHistory[j.ID] = append(f.sloHistory[j.ID], node.SLOPoint{Time: j.At, Requests: j.RecentN, Late: j.RecentLate, P50Ms: j.P50Ms,
			PctMs: j.PctMs, BoundMs: j.BoundMs})
	}
}

// SLO returns what SetSLO set.
func (f *FakeNode) SLO() node.SLOView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.slo
	v.Jobs, v.Instances = slices.Clone(v.Jobs), slices.Clone(v.Instances)
	if v.Jobs == nil {
		v.Jobs = []node.JobSLO{}
	}
	if v.Instances == nil {
		v.Instances = []node.InstanceSLO{}
	}
	return v
}

// JobSLO returns a job's view in the last SetSLO and its points.
func (f *FakeNode) JobSLO(id string) (node.JobSLOView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return node.JobSLOView{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	v := node.JobSLOView{History: slices.Clone(f.sloHistory[id]), Decisions: []node.SLODecision{}}
	if v.History == nil {
		v.History = []node.SLOPoint{}
	}
	for _, j := range f.slo.Jobs {
		if j.ID == id {
			v.SLO = &j
		}
	}
	return v, nil
}
