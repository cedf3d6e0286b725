package jobsim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
//   - next to co-runners whose shares sum to S above what the instance
//     has (C, 100 for a whole GPU), each job runs as at p·(C/S)^β: MPS
//     caps a client's share but does not reserve it, so oversubscribed
//     clients split the SMs. β is fitted so that the measured runs with
//     shares summing above 100 % are predicted without bias (the model
//     before this term over-predicted them by 10.9 %);
//   - a co-runner counts with the fraction of time it is busy (a service
//     between requests takes no SMs), and co-runners at a lower MPS
//     client priority (offline jobs at 1, online at 0) do not take SMs
//     from a job above them, while those above take first what they
//     occupy: their SM occupancy alone at their share (the fraction of
//     the GPU's warp slots they fill), not their whole share, since the
//     SMs' other slots still run the lower client's blocks. The measured
//     H100 runs kept an online job near its alone latency next to a
//     trainer at priority 1 (GPU-FACTS.md), and trainers at priority 1
//     next to busy services kept far more than a share-based rule leaves
//     them (docs/results/simcheck-h100.md);
//   - the result is divided by 1 + a·x, where x is the co-runners'
//     DRAM-bandwidth use (fraction of peak, times their busy fraction),
//     each at the share it effectively gets next to the others (a
//     co-runner slowed by priority or oversubscription moves less
//     data), and a is fitted per job type by least squares to the
//     measured co-located runs (the interference that neither MPS shares
//     nor priority remove is the memory system's).
//
// Speeds are relative to the job alone on the whole GPU at 100 %: a
// throughput ratio for offline jobs, the inverse latency ratio for online
// ones. A MIG instance of s SMs at p % counts as p·s/S % of the whole GPU
// of S SMs, and isolates its jobs from other instances.
type SpeedModel struct {
	alone        map[string][]float64 // at 10, 20, ... 100 %
	dram         map[string][]float64 // DRAM use alone, fraction of peak
	occ          map[string][]float64 // SM occupancy alone, fraction of the GPU's warp slots
	gpuBusy      map[string]float64   // NVML utilisation alone at 100 %, fraction
	latencyMs    map[string]float64   // online types: iteration time alone at 100 %
	interference map[string]float64
	// beta is the oversubscription exponent.
	beta float64
	fit  Fit
	// sliceW is the MIG rule's weight (sliceSpeed), slices its fit.
	sliceW float64
	slices SliceFit
}

// Fit is how well the ground truth reproduces the measured co-located
// runs.
type Fit struct {
	// MeanError is the mean relative error over all co-located runs.
	MeanError float64 `json:"mean_error"`
	// OverBias is the mean signed relative error (prediction above the
	// measurement positive) over the runs whose shares sum above 100 %,
	// Over of them.
	OverBias float64 `json:"over_bias"`
	Over     int     `json:"over"`
	// Beta is the fitted oversubscription exponent.
	Beta float64 `json:"beta"`
}

const steps = 10 // measured percentages: 10, 20, ... 100

// coRun is a co-located sample with its co-runners' shares.
type coRun struct {
	s   predictor.Sample
	rel float64 // measured speed relative to alone at 100 %
	co  []CoShare
	sum float64 // shares summed, the job's own included
}

// NewSpeedModel builds the ground truth from samples that hold every
// job's alone runs at 10, 20, ... 100 %.
func NewSpeedModel(samples []predictor.Sample) (*SpeedModel, error) {
	m := &SpeedModel{sliceW: 1, slices: SliceFit{SliceFit: predictor.SliceFit{W: 1}}, alone: map[string][]float64{}, dram: map[string][]float64{}, occ: map[string][]float64{}, gpuBusy: map[string]float64{}, latencyMs: map[string]float64{}, interference: map[string]float64{}}
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
			m.occ[s.Job] = make([]float64, steps)
		}
		k := s.MPSPercent/steps - 1
		m.alone[s.Job][k] = rel(s)
		m.dram[s.Job][k] = s.RunUtil.DRAM / 100
		m.occ[s.Job][k] = s.RunUtil.Occupancy / 100
		if s.MPSPercent == 100 {
			m.gpuBusy[s.Job] = s.RunUtil.GPU / 100
			if s.Kind == predictor.Online {
				m.latencyMs[s.Job] = s.IterMs
			}
		}
	}
	for job, c := range m.alone {
		if slices.Contains(c, 0) {
			return nil, fmt.Errorf("speed model: %s lacks an alone run at some of 10, 20, ... 100 %%", job)
		}
	}
	var runs []coRun
	for _, s := range samples {
		if s.CoRunners == 0 {
			continue
		}
		if _, ok := m.alone[s.Job]; !ok {
			return nil, fmt.Errorf("speed model: %s ran co-located but never alone", s.Job)
		}
		co, err := coRunners(s)
		if err != nil {
			return nil, fmt.Errorf("speed model: %w", err)
		}
		for _, c := range co {
			if _, ok := m.alone[c.Job]; !ok {
				return nil, fmt.Errorf("speed model: run %s: co-runner %s never ran alone", s.Run, c.Job)
			}
		}
		r := coRun{s: s, rel: rel(s), co: co, sum: float64(s.MPSPercent)}
		for _, c := range co {
			r.sum += c.Pct
		}
		runs = append(runs, r)
	}
	// β on a grid: the one whose refitted model is least biased on the
	// oversubscribed runs.
	bestBias := math.Inf(1)
	var best *SpeedModel
	for b := 0; b <= 20; b++ {
		cand := *m
		cand.beta = float64(b) / 20
		cand.interference = cand.fitInterference(runs)
		f := cand.evaluate(runs)
		if math.Abs(f.OverBias) < bestBias {
			bestBias, best = math.Abs(f.OverBias), &cand
			best.fit = f
		}
	}
	best.addBatch1()
	return best, nil
}

// coRunners parses a co-located sample's run key ("a@40+b@60") into its
// co-runners: every member but the sample's own job at its share.
func coRunners(s predictor.Sample) ([]CoShare, error) {
	var co []CoShare
	self := false
	for _, m := range strings.Split(s.Run, "+") {
		job, pct, ok := strings.Cut(m, "@")
		p, err := strconv.Atoi(pct)
		if !ok || err != nil || p < steps || p > 100 {
			return nil, fmt.Errorf("run %q: member %q is not job@percent", s.Run, m)
		}
		if !self && job == s.Job && p == s.MPSPercent {
			self = true
			continue
		}
		co = append(co, CoShare{Job: job, Pct: float64(p)})
	}
	if !self || len(co) != s.CoRunners {
		return nil, fmt.Errorf("run %q: does not hold %s@%d and %d co-runners", s.Run, s.Job, s.MPSPercent, s.CoRunners)
	}
	return co, nil
}

// fitInterference fits a per job type: a = sum(x·y) / sum(x²) with y =
// predicted-without-interference / measured - 1.
func (m *SpeedModel) fitInterference(runs []coRun) map[string]float64 {
	sxy, sxx := map[string]float64{}, map[string]float64{}
	for _, r := range runs {
		x := m.memLoad(CoShare{Job: r.s.Job, Pct: float64(r.s.MPSPercent)}, 100, r.co)
		y := m.Alone(r.s.Job, m.effective(float64(r.s.MPSPercent), 100, 0, r.co))/r.rel - 1
		sxy[r.s.Job] += x * y
		sxx[r.s.Job] += x * x
	}
	out := map[string]float64{}
	for job := range m.alone {
		if sxx[job] > 0 {
			out[job] = max(0, sxy[job]/sxx[job])
		}
	}
	return out
}

// evaluate is the model's fit on the co-located runs.
func (m *SpeedModel) evaluate(runs []coRun) Fit {
	f := Fit{Beta: m.beta}
	for _, r := range runs {
		x := m.memLoad(CoShare{Job: r.s.Job, Pct: float64(r.s.MPSPercent)}, 100, r.co)
		got := m.Alone(r.s.Job, m.effective(float64(r.s.MPSPercent), 100, 0, r.co)) / (1 + m.interference[r.s.Job]*x)
		e := (got - r.rel) / r.rel
		f.MeanError += math.Abs(e)
		if r.sum > 100 {
			f.OverBias += e
			f.Over++
		}
	}
	if len(runs) > 0 {
		f.MeanError /= float64(len(runs))
	}
	if f.Over > 0 {
		f.OverBias /= float64(f.Over)
	}
	return f
}

// Fit reports how well the model reproduces the measured co-located runs.
func (m *SpeedModel) Fit() Fit { return m.fit }

// Has reports whether the model knows a job type.
func (m *SpeedModel) Has(job string) bool { _, ok := m.alone[job]; return ok }

// LatencyMs is an online job type's latency alone on the whole GPU at
// 100 % (one batch of the measured size), 0 for offline types.
func (m *SpeedModel) LatencyMs(job string) float64 { return m.latencyMs[job] }

// Alone is the job's speed alone at pct % of the whole GPU.
func (m *SpeedModel) Alone(job string, pct float64) float64 { return curveAt(m.alone[job], pct) }

// curveAt is a per-share curve measured at 10, 20, ... 100 % read at pct
// % of the whole GPU: linear between the measured shares, proportional to
// pct below the smallest, flat above 100 %.
func curveAt(c []float64, pct float64) float64 {
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

// memLoad is the DRAM bandwidth self's co-runners use, as a fraction of
// peak: each at the share it effectively gets next to the others and
// self (effective), times its busy fraction.
func (m *SpeedModel) memLoad(self CoShare, capacity float64, co []CoShare) float64 {
	x := 0.0
	others := make([]CoShare, 0, len(co))
	for i, c := range co {
		if c.busy() == 0 {
			continue
		}
		others = append(others[:0], self)
		for k, o := range co {
			if k != i {
				others = append(others, o)
			}
		}
		x += curveAt(m.dram[c.Job], m.effective(c.Pct, capacity, c.Prio, others)) * c.busy()
	}
	return x
}

// CoShare is a co-runner in the same instance at a share of the whole GPU.
type CoShare struct {
	Job string
	Pct float64
	// Idle is the fraction of time the co-runner runs no kernels: 0 for a
	// batch job, 1 - utilisation for a service between requests.
	Idle float64
	// Prio is its MPS client priority: 0 normal, 1 below normal.
	Prio int
}

// busy is the fraction of time a co-runner takes its share.
func (c CoShare) busy() float64 { return 1 - min(1, max(0, c.Idle)) }

// effective is the share of the whole GPU a job at pct and priority prio
// gets in an instance of capacity % of the whole GPU next to co.
func (m *SpeedModel) effective(pct, capacity float64, prio int, co []CoShare) float64 {
	above, same := 0.0, pct
	for _, c := range co {
		switch {
		case c.Prio < prio:
			above += min(c.Pct, 100*curveAt(m.occ[c.Job], c.Pct)) * c.busy()
		case c.Prio == prio:
			same += c.Pct * c.busy()
		}
	}
	avail := max(0, capacity-above)
	eff := min(pct, avail)
	if same > avail && same > 0 {
		eff *= math.Pow(avail/same, m.beta)
	}
	return eff
}

// Shared is the job's speed at pct % of the whole GPU and MPS client
// priority prio, in an instance of capacity % of the whole GPU (its SMs
// over the GPU's, times 100), next to co-runners of the same instance.
func (m *SpeedModel) Shared(job string, pct, capacity float64, prio int, co []CoShare) float64 {
	x := m.memLoad(CoShare{Job: job, Pct: pct, Prio: prio}, capacity, co)
	return m.inInstance(job, m.effective(pct, capacity, prio, co), capacity) / (1 + m.interference[job]*x)
}
