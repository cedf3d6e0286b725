package jobsim

import (
	"fmt"
	"math"
	"slices"

	"github.com/mmkgpu/mmk/predictor"
)

// SpeedModel is the job-level simulator's ground truth: how fast a job
// really runs at an MPS share of some SMs next to co-runners. It is built
// from the measured profiling samples directly and is a different model
// from the predictor the policies decide with:
//
//   - alone, a job's relative speed at p % of the whole GPU is the
//     measured one, linear between the measured percentages (10, 20, ...
//     100) and proportional to p below the smallest;
//   - next to co-runners it is divided by 1 + a·x, where x is the sum of
//     the co-runners' DRAM-bandwidth use alone at their shares (fraction
//     of peak) and a is fitted per job type by least squares to the
//     measured co-located runs (the interference the SM partitioning of
//     MPS does not remove is the memory system's).
//
// Speeds are relative to the job alone on the whole GPU at 100 %: a
// throughput ratio for offline jobs, the inverse latency ratio for online
// ones. A MIG instance of s SMs at p % counts as p·s/S % of the whole GPU
// of S SMs, and isolates its jobs from other instances.
type SpeedModel struct {
	alone        map[string][]float64 // at 10, 20, ... 100 %
	dram         map[string][]float64 // DRAM use alone, fraction of peak
	gpuBusy      map[string]float64   // NVML utilisation alone at 100 %, fraction
	smBusy       map[string]float64   // SM utilisation alone at 100 %, fraction
	interference map[string]float64
}

const steps = 10 // measured percentages: 10, 20, ... 100

// NewSpeedModel builds the ground truth from samples that hold every
// job's alone runs at 10, 20, ... 100 %.
func NewSpeedModel(samples []predictor.Sample) (*SpeedModel, error) {
	m := &SpeedModel{alone: map[string][]float64{}, dram: map[string][]float64{}, gpuBusy: map[string]float64{}, smBusy: map[string]float64{}, interference: map[string]float64{}}
	base := predictor.Bases(samples)
	rel := func(s predictor.Sample) float64 {
		r := s.Target() / math.Exp(base[s.Job])
		if s.Kind == predictor.Online {
			return 1 / r
		}
		return r
	}
	for _, s := range samples {
		if s.CoRunners != 0 {
			continue
		}
		if s.MPSPercent%steps != 0 || s.MPSPercent < steps || s.MPSPercent > 100 {
			return nil, fmt.Errorf("speed model: %s alone at %d %%: want multiples of %d", s.Job, s.MPSPercent, steps)
		}
		if _, ok := m.alone[s.Job]; !ok {
			m.alone[s.Job] = make([]float64, steps)
			m.dram[s.Job] = make([]float64, steps)
		}
		k := s.MPSPercent/steps - 1
		m.alone[s.Job][k] = rel(s)
		m.dram[s.Job][k] = s.RunUtil.DRAM / 100
		if s.MPSPercent == 100 {
			m.gpuBusy[s.Job], m.smBusy[s.Job] = s.RunUtil.GPU/100, s.RunUtil.SM/100
		}
	}
	for job, c := range m.alone {
		if slices.Contains(c, 0) {
			return nil, fmt.Errorf("speed model: %s lacks an alone run at some of 10, 20, ... 100 %%", job)
		}
	}
	// a = sum(x·y) / sum(x²) with y = alone/measured - 1.
	sxy, sxx := map[string]float64{}, map[string]float64{}
	for _, s := range samples {
		if s.CoRunners == 0 {
			continue
		}
		if _, ok := m.alone[s.Job]; !ok {
			return nil, fmt.Errorf("speed model: %s ran co-located but never alone", s.Job)
		}
		x := s.CoUtil.DRAM / 100
		y := m.Alone(s.Job, float64(s.MPSPercent))/rel(s) - 1
		sxy[s.Job] += x * y
		sxx[s.Job] += x * x
	}
	for job := range m.alone {
		if sxx[job] > 0 {
			m.interference[job] = max(0, sxy[job]/sxx[job])
		}
	}
	return m, nil
}

// Has reports whether the model knows a job type.
func (m *SpeedModel) Has(job string) bool { _, ok := m.alone[job]; return ok }

// Alone is the job's speed alone at pct % of the whole GPU.
func (m *SpeedModel) Alone(job string, pct float64) float64 {
	c := m.alone[job]
	if len(c) == 0 || pct <= 0 {
		return 0
	}
	if pct <= steps {
		return c[0] * pct / steps
	}
	if pct >= 100 {
		return c[steps-1]
	}
	k := int(pct / steps) // between c[k-1] (k·10 %) and c[k]
	f := (pct - float64(k*steps)) / steps
	return c[k-1] + f*(c[k]-c[k-1])
}

// dramAt is the job's DRAM use alone at the measured share nearest pct.
func (m *SpeedModel) dramAt(job string, pct float64) float64 {
	k := min(steps-1, max(0, int(math.Round(pct/steps))-1))
	return m.dram[job][k]
}

// CoShare is a co-runner at a share of the whole GPU.
type CoShare struct {
	Job string
	Pct float64
}

// Shared is the job's speed at pct % of the whole GPU next to co-runners
// of the same instance.
func (m *SpeedModel) Shared(job string, pct float64, co []CoShare) float64 {
	x := 0.0
	for _, c := range co {
		x += m.dramAt(c.Job, c.Pct)
	}
	return m.Alone(job, pct) / (1 + m.interference[job]*x)
}

// FitError is the mean relative error of Shared against the measured
// co-located samples: how faithful the ground truth is.
func (m *SpeedModel) FitError(samples []predictor.Sample) float64 {
	base := predictor.Bases(samples)
	sum, n := 0.0, 0
	for _, s := range samples {
		if s.CoRunners == 0 || !m.Has(s.Job) {
			continue
		}
		r := s.Target() / math.Exp(base[s.Job])
		if s.Kind == predictor.Online {
			r = 1 / r
		}
		got := m.Alone(s.Job, float64(s.MPSPercent)) / (1 + m.interference[s.Job]*s.CoUtil.DRAM/100)
		sum += math.Abs(got-r) / r
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
