package jobsim

import (
	"fmt"
	"slices"
)

// RunJob is one job of a measured run that shared one whole GPU: what
// the ground truth needs to say how fast it ran.
type RunJob struct {
	Type string
	// Start and End bound its window on the GPU, in seconds.
	Start, End float64
	// Idle is the share of its window it leaves the GPU (a service
	// between requests); Prio its MPS client priority.
	Idle float64
	Prio int
}

// RunSpeeds is the ground truth's mean speed of each job over its
// window, relative to the job alone on the whole GPU at 100 %, under time
// slicing (slicing) or MPS without limits: the window is cut where
// co-runners come and go, and each piece runs as the simulator runs a
// shared GPU. It checks the simulator against a real run of the same
// jobs (bench/simcheck).
func (m *SpeedModel) RunSpeeds(slicing bool, jobs []RunJob) ([]float64, error) {
	var cuts []float64
	for i, j := range jobs {
		if !m.Has(j.Type) {
			return nil, fmt.Errorf("run check: job %d: unknown type %q", i, j.Type)
		}
		if !(j.End > j.Start) {
			return nil, fmt.Errorf("run check: job %d (%s): window %v..%v s: want an end after the start", i, j.Type, j.Start, j.End)
		}
		cuts = append(cuts, j.Start, j.End)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	sum := make([]float64, len(jobs))
	var on []CoShare
	var idx []int
	for c := 1; c < len(cuts); c++ {
		a, b := cuts[c-1], cuts[c]
		on, idx = on[:0], idx[:0]
		for i, j := range jobs {
			if j.Start <= a && j.End >= b {
				on = append(on, CoShare{Job: j.Type, Pct: 100, Idle: j.Idle, Prio: j.Prio})
				idx = append(idx, i)
			}
		}
		for k, i := range idx {
			sum[i] += (b - a) * m.sharedGPU(slicing, 100, on, k)
		}
	}
	for i, j := range jobs {
		sum[i] /= j.End - j.Start
	}
	return sum, nil
}
