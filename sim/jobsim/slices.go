package jobsim

import "github.com/mmkgpu/mmk/predictor"

// SliceFit is how well the ground truth's MIG rule reproduces measured
// slice runs.
type SliceFit struct {
	predictor.SliceFit
	// BandwidthBound counts the runs whose DRAM use at the slice's SM
	// share, as the job's alone curve has it, exceeds the slice's share
	// of the memory system: where a cap on bandwidth alone would slow it.
	BandwidthBound int `json:"bandwidth_bound"`
}

// sliceSpeed is a job's speed alone in a MIG slice holding c % of the
// GPU's SMs: predictor.SliceBlend of its MPS curve at c % and at 100 %,
// weight w.
func (m *SpeedModel) sliceSpeed(job string, c, w float64) float64 {
	return predictor.SliceBlend(m.Alone(job, c), m.Alone(job, 100), c, w)
}

// inInstance is a job's speed at eff % of the whole GPU's SMs in an
// instance of capacity %: on a whole GPU its MPS curve; in a MIG slice
// the slice's speed (sliceSpeed) times its MPS curve's share at the same
// fraction of the slice (at most 1).
func (m *SpeedModel) inInstance(job string, eff, capacity float64) float64 {
	if capacity >= 100 || m.sliceW >= 1 || capacity <= 0 {
		return m.Alone(job, eff)
	}
	whole := m.Alone(job, 100)
	if whole <= 0 {
		return 0
	}
	// The measured curves are not all monotone (noise): a part of a
	// slice never runs faster than the whole slice.
	return m.sliceSpeed(job, capacity, m.sliceW) * min(1, m.Alone(job, 100*min(eff, capacity)/capacity)/whole)
}

// FitSlices fits the MIG rule's weight (predictor.FitSliceWeight) to
// measured slice runs of job types the model knows, sets it, and reports
// the fit; runs of unknown types are left out.
func (m *SpeedModel) FitSlices(runs []predictor.SliceRun) SliceFit {
	var known []predictor.SliceRun
	for _, r := range runs {
		if m.Has(r.Type) {
			known = append(known, r)
		}
	}
	f := SliceFit{SliceFit: predictor.FitSliceWeight(known, func(i int, w float64) float64 {
		return m.sliceSpeed(known[i].Type, 100*known[i].SMShare, w)
	})}
	for _, r := range known {
		if curveAt(m.dram[r.Type], 100*r.SMShare) > r.MemShare {
			f.BandwidthBound++
		}
	}
	m.sliceW = f.W
	m.slices = f
	return f
}

// Slices reports the MIG rule's fit (FitSlices); W 1 and no runs when it
// was never fitted.
func (m *SpeedModel) Slices() SliceFit { return m.slices }

// InSlice is a job's speed alone in a MIG slice holding smShare of the
// GPU's SMs, by the fitted rule.
func (m *SpeedModel) InSlice(job string, smShare float64) float64 {
	return m.inInstance(job, 100*smShare, 100*smShare)
}
