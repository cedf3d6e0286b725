package partitioner

import (
	"fmt"
	"slices"
)

// StepKind is what one reconfiguration step does.
type StepKind string

// The four kinds of step, in the order a plan uses them for one instance.
const (
	DestroyComputeInstance StepKind = "destroy-compute-instance"
	DestroyGPUInstance     StepKind = "destroy-gpu-instance"
	CreateGPUInstance      StepKind = "create-gpu-instance"
	CreateComputeInstance  StepKind = "create-compute-instance"
)

// Step is one operation of a reconfiguration. Instance names the GPU
// instance by placement ("2g.20gb@4"). The ids are those of existing
// instances; -1 where the instance is created by an earlier step or, in a
// plan made from layout text, where no GPU has said its ids.
type Step struct {
	Kind              StepKind `json:"kind"`
	Instance          string   `json:"instance"`
	Profile           string   `json:"profile"`
	Start             int      `json:"start"`
	GPUInstanceID     int      `json:"gpuInstanceId"`
	ComputeInstanceID int      `json:"computeInstanceId"`
}

// String describes the step for people, e.g.
// "destroy compute instance 1 of GPU instance 2 (3g.40gb@4)", or without
// ids where they are unknown: "destroy GPU instance 3g.40gb@4".
func (s Step) String() string {
	gi := "GPU instance " + s.Instance
	if s.GPUInstanceID >= 0 {
		gi = fmt.Sprintf("GPU instance %d (%s)", s.GPUInstanceID, s.Instance)
	}
	switch s.Kind {
	case DestroyComputeInstance:
		if s.ComputeInstanceID >= 0 {
			return fmt.Sprintf("destroy compute instance %d of %s", s.ComputeInstanceID, gi)
		}
		return "destroy the compute instance of " + gi
	case DestroyGPUInstance:
		return "destroy " + gi
	case CreateGPUInstance:
		return "create " + gi
	default:
		return "create compute instance on " + gi
	}
}

// Reconfiguration is the plan that takes a GPU from its current instances
// to a target layout.
type Reconfiguration struct {
	From Layout `json:"from"`
	To   Layout `json:"to"`
	// Steps are the operations, in the order they must run.
	Steps []Step `json:"steps"`
	// Kept are the instances that survive untouched: same profile and
	// placement, one whole compute instance. Their jobs keep running.
	Kept []GPUInstance `json:"kept"`
	// MustBeIdle are the existing instances the plan destroys or whose
	// compute instances it replaces: no process may run on them when the
	// plan is applied.
	MustBeIdle []GPUInstance `json:"mustBeIdle"`
}

// PlanReconfiguration returns the fewest steps that turn the instances of
// a GPU of model m into the target layout, one whole compute instance per
// GPU instance.
//
// A GPU instance cannot be resized or moved, so every current instance
// whose profile and placement are not in the target is destroyed (its
// compute instances first) and every target instance not already present is
// created (then its compute instance). A present instance whose compute
// instances are not one whole one keeps its GPU instance and only has its
// compute instances replaced. All destructions come before all creations,
// since new instances may need the slices the old ones free. Nothing else
// can be spared, so the plan is minimal. Each group runs in placement order.
func PlanReconfiguration(m *Model, current []GPUInstance, target Layout) (*Reconfiguration, error) {
	from, err := LayoutOf(m, current)
	if err != nil {
		return nil, fmt.Errorf("current instances: %w", err)
	}
	if target.Model == nil {
		target.Model = m
	}
	if err := target.validate(); err != nil {
		return nil, fmt.Errorf("target layout: %w", err)
	}
	r := &Reconfiguration{From: from, To: target}
	byPlacement := map[string]GPUInstance{}
	cur := slices.Clone(current)
	slices.SortFunc(cur, func(a, b GPUInstance) int { return a.Start - b.Start })
	for _, gi := range cur {
		byPlacement[gi.String()] = gi
	}
	wanted := map[string]bool{}
	for _, in := range target.Instances {
		wanted[in.String()] = true
	}

	var destroy, create []Step
	for _, gi := range cur {
		keep := wanted[gi.String()]
		if keep && gi.whole() {
			r.Kept = append(r.Kept, gi)
			continue
		}
		if len(gi.ComputeInstances) > 0 {
			r.MustBeIdle = append(r.MustBeIdle, gi)
		}
		for _, ci := range gi.ComputeInstances {
			destroy = append(destroy, step(DestroyComputeInstance, gi.Profile, gi.Start, gi.ID, ci.ID))
		}
		if keep {
			create = append(create, step(CreateComputeInstance, gi.Profile, gi.Start, gi.ID, -1))
			continue
		}
		destroy = append(destroy, step(DestroyGPUInstance, gi.Profile, gi.Start, gi.ID, -1))
	}
	for _, in := range target.Instances {
		if _, ok := byPlacement[in.String()]; ok {
			continue
		}
		create = append(create,
			step(CreateGPUInstance, in.Profile.Name, in.Start, -1, -1),
			step(CreateComputeInstance, in.Profile.Name, in.Start, -1, -1))
	}
	slices.SortStableFunc(create, func(a, b Step) int { return a.Start - b.Start })
	r.Steps = append(destroy, create...)
	return r, nil
}

func step(kind StepKind, profile string, start, gi, ci int) Step {
	return Step{
		Kind: kind, Instance: fmt.Sprintf("%s@%d", profile, start), Profile: profile, Start: start,
		GPUInstanceID: gi, ComputeInstanceID: ci,
	}
}

// InstancesOf describes a layout as the instances a GPU would report, each
// with one whole compute instance and unknown (-1) ids: the planner's input
// when the current state is given as text rather than read from a GPU.
func InstancesOf(l Layout) []GPUInstance {
	out := make([]GPUInstance, len(l.Instances))
	for i, in := range l.Instances {
		p := in.Profile
		out[i] = GPUInstance{
			ID: -1, Profile: p.Name, Start: in.Start, Size: p.MemorySlices,
			MemoryMiB: p.MemoryMiB, SMs: p.SMs, ComputeSlices: p.ComputeSlices,
			ComputeInstances: []ComputeInstance{{ID: -1, ComputeSlices: p.ComputeSlices}},
		}
	}
	return out
}
