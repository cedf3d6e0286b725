package partitioner

import (
	"errors"
	"fmt"
	"slices"
)

// Apply carries out a reconfiguration on GPU gpu of a backend. It first
// re-reads the GPU and refuses to start if the instances differ from the
// plan's starting point or if an instance the plan touches has processes.
// Steps then run in order; the first failure stops the run and is returned
// with the step that failed. Because the planner works from whatever
// instances exist, a stopped run is finished by planning again from the
// GPU's new state. On success Apply checks that the GPU holds the target
// layout.
func Apply(b Backend, gpu int, r *Reconfiguration) error {
	current, now, err := readLayout(b, gpu, r.To.Model)
	if err != nil {
		return fmt.Errorf("apply on GPU %d: %w", gpu, err)
	}
	if !now.Equal(r.From) {
		return fmt.Errorf("apply on GPU %d: GPU holds %q, the plan starts from %q: plan again", gpu, now, r.From)
	}
	for _, gi := range current {
		if !slices.ContainsFunc(r.MustBeIdle, func(x GPUInstance) bool { return x.ID == gi.ID }) {
			continue
		}
		if ps := gi.Processes(); len(ps) > 0 {
			return fmt.Errorf("apply on GPU %d: %w", gpu, &BusyError{Instance: gi.String(), Processes: ps})
		}
	}

	created := map[int]int{} // placement start -> GPU instance id made by a step
	for i, s := range r.Steps {
		if err := applyStep(b, gpu, s, created); err != nil {
			return fmt.Errorf("apply on GPU %d: step %d of %d (%s): %w", gpu, i+1, len(r.Steps), s, err)
		}
	}

	_, got, err := readLayout(b, gpu, r.To.Model)
	if err != nil {
		return fmt.Errorf("apply on GPU %d: read back: %w", gpu, err)
	}
	if !got.Equal(r.To) {
		return fmt.Errorf("apply on GPU %d: GPU holds %q after the plan, want %q", gpu, got, r.To)
	}
	return nil
}

// readLayout reads a GPU's instances and the layout they form.
func readLayout(b Backend, gpu int, m *Model) ([]GPUInstance, Layout, error) {
	insts, err := b.Instances(gpu)
	if err != nil {
		return nil, Layout{}, err
	}
	l, err := LayoutOf(m, insts)
	return insts, l, err
}

func applyStep(b Backend, gpu int, s Step, created map[int]int) error {
	switch s.Kind {
	case DestroyComputeInstance:
		return b.DestroyComputeInstance(gpu, s.GPUInstanceID, s.ComputeInstanceID)
	case DestroyGPUInstance:
		return b.DestroyGPUInstance(gpu, s.GPUInstanceID)
	case CreateGPUInstance:
		id, err := b.CreateGPUInstance(gpu, s.Profile, s.Start)
		if err != nil {
			return err
		}
		created[s.Start] = id
		return nil
	case CreateComputeInstance:
		gi := s.GPUInstanceID
		if gi < 0 {
			id, ok := created[s.Start]
			if !ok {
				return errors.New("its GPU instance was not created by an earlier step")
			}
			gi = id
		}
		_, err := b.CreateComputeInstance(gpu, gi)
		return err
	}
	return fmt.Errorf("unknown step kind %q", s.Kind)
}
