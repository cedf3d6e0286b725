package predictor

import (
	"fmt"
	"maps"
	"math"

	"github.com/mmkgpu/mmk/partitioner"
)

// Estimator answers the partition algorithm's questions with a trained
// model: it is the partitioner.Estimator of mmk.
//
// Profiles were measured on a whole GPU under MPS, so a MIG instance is
// modelled by the SMs it gives the job: a job at percentage p of an
// instance of s SMs on a GPU of S SMs is asked about as the job at
// p·s/S % of the whole GPU it was profiled on, then slowed by the slice
// rule (Slices): a slice also has only its share of the L2 and memory
// system, which an MPS share of the whole GPU does not, so published
// runs of jobs alone in A100 slices are far slower than MPS shares of as
// many SMs (FitSlices; data.SliceRuns).
//
// OfflinePriority is the MPS client priority offline jobs run at (mmkd's
// priority shares: 1, below the online jobs' 0); models trained on
// samples with client priorities (the extended features) see it.
type Estimator struct {
	Model           *Model
	Profiles        map[string]Profile
	OfflinePriority int
	// Slices is the slice rule's fit, its weight for SliceBlend; nil
	// takes a slice as an MPS share of its SMs. FitSlices sets it.
	Slices *SliceFit
}

// priority is the client priority a job runs at.
func (e Estimator) priority(j partitioner.Job) int {
	if j.Online {
		return 0
	}
	return e.OfflinePriority
}

var _ partitioner.Estimator = Estimator{}

// Speed is the job's predicted speed relative to its profile run (alone,
// whole GPU, 100 %): throughput ratio offline, inverse latency ratio online.
func (e Estimator) Speed(j partitioner.Job, sms, gpuSMs, percent int, co []partitioner.Share) (float64, error) {
	v, err := e.speed(j, sms, gpuSMs, percent, co)
	if err != nil || e.Slices == nil || e.Slices.W >= 1 || sms >= gpuSMs || gpuSMs <= 0 {
		return v, err
	}
	// In a MIG slice: the answer times the slice rule's penalty for the
	// job alone in the slice against an MPS share of its SMs.
	mps, err := e.speed(j, sms, gpuSMs, 100, nil)
	if err != nil {
		return 0, err
	}
	whole, err := e.speed(j, gpuSMs, gpuSMs, 100, nil)
	if err != nil || mps <= 0 {
		return 0, err
	}
	c := 100 * float64(sms) / float64(gpuSMs)
	return v * min(1, SliceBlend(mps, whole, c, e.Slices.W)/mps), nil
}

// speed is Speed without the slice rule.
func (e Estimator) speed(j partitioner.Job, sms, gpuSMs, percent int, co []partitioner.Share) (float64, error) {
	prof, ok := e.Profiles[j.Type]
	if !ok {
		return 0, fmt.Errorf("predictor: no profile for job type %q", j.Type)
	}
	base, ok := e.Model.Schema.Base[j.Type]
	if !ok {
		return 0, fmt.Errorf("predictor: the model was not trained on job type %q", j.Type)
	}
	ju, ok := prof.Alone[100]
	if !ok {
		return 0, fmt.Errorf("predictor: job type %s has no profile alone at 100 %%", j.Type)
	}
	// Below the smallest profiled share, speed is taken as proportional
	// to the SMs: the model is asked at that share and scaled down.
	pct, scale := WholeGPUPercent(percent, sms, gpuSMs), 1.0
	if lo := prof.lowest(); pct < lo {
		pct, scale = lo, float64(pct)/float64(lo)
	}
	in := Input{Job: j.Type, MPSPercent: pct, SMs: prof.SMs, CoRunners: len(co), JobUtil: ju, MPSPriority: e.priority(j)}
	for _, c := range co {
		cp, ok := e.Profiles[c.Job.Type]
		if !ok {
			return 0, fmt.Errorf("predictor: no profile for co-runner type %q", c.Job.Type)
		}
		cpct := WholeGPUPercent(c.Percent, sms, gpuSMs)
		u, err := cp.nearest(cpct)
		if err != nil {
			return 0, err
		}
		in.AddCoRunner(u, cpct, e.priority(c.Job), in.MPSPriority)
		in.CoJobs = append(in.CoJobs, c.Job.Type)
	}
	pred, err := e.Model.Predict(in)
	if err != nil {
		return 0, err
	}
	rel := pred / math.Exp(base)
	if KindOf(j.Type) == Online {
		rel = 1 / rel
	}
	return rel * scale, nil
}

// DefaultKind is the model mmkd and the simulators train when no model
// file is given: gradient boosting, picked by its held-out error on
// configuration-disjoint splits: the lowest on the H100 campaign (8.2 %
// against the random forest's 10.5 %, a measured noise floor of 3.2 %:
// docs/results/predictor-h100.md), within 0.03 points of the lowest
// (gbrt+co) on the H200 profiles (7.06 % against the forest's 8.25 %:
// docs/results/predictor.md). MMK's paper used a forest; mmk keeps it as
// KindForest.
const DefaultKind = KindBoost

// DefaultModel is DefaultKind's name among ModelNames (mmkctl predictor
// --model).
const DefaultModel = "gbrt"

// TrainEstimator trains mmk's default model (DefaultKind, seeded with
// seed) on samples and returns it as the partitioner's estimator with the
// samples' job profiles.
func TrainEstimator(samples []Sample, seed uint64) (Estimator, error) {
	m, err := Train(DefaultKind, samples, ForestConfig{Seed: seed})
	if err != nil {
		return Estimator{}, err
	}
	return Estimator{Model: m, Profiles: Profiles(samples)}, nil
}

// lowest is the smallest percentage the job was profiled alone at.
func (p Profile) lowest() int {
	lo := 0
	for q := range p.Alone {
		if lo == 0 || q < lo {
			lo = q
		}
	}
	return lo
}

// WholeGPUPercent is the MPS percentage of the whole GPU that gives as
// many SMs as percent of an instance of sms SMs (at least 1).
func WholeGPUPercent(percent, sms, gpuSMs int) int {
	if gpuSMs <= 0 || sms >= gpuSMs {
		return percent
	}
	return max(1, int(math.Round(float64(percent)*float64(sms)/float64(gpuSMs))))
}

// nearest is the profile's utilisation at the measured percentage closest
// to p (the lower one on a tie).
func (p Profile) nearest(pct int) (Util, error) {
	best, ok := nearestPercent(maps.Keys(p.Alone), pct)
	if !ok {
		return Util{}, fmt.Errorf("predictor: job type %s has no profile", p.Job)
	}
	return p.Alone[best], nil
}
