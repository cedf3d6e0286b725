package node

import (
	"math"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
)

// estimator is the partitioner's Estimator for real jobs: the trained
// predictor for the job types it was profiled on, and, for a job whose
// type it does not know (no workload hint, or a model never profiled), a
// generic curve: speed grows with the instance's share of the GPU's SMs,
// and with the MPS percentage up to UnknownDemand, where it flattens. So
// an unknown job's MPS demand is UnknownDemand and two such jobs share an
// instance. Co-runners of unknown type are left out of the predictor's
// contention features: it has no profile to describe them (for an online
// job with a latency need they crowd its share instead: Speed). Both are
// documented approximations (docs/daemon.md); a workload hint of a
// profiled type, or profiling the workload, removes them.
type estimator struct {
	pred  predictor.Estimator
	known map[string]bool
}

var _ partitioner.Estimator = (*estimator)(nil)

// UnknownDemand is the MPS percentage at which the generic curve of a
// job of unknown type stops gaining speed: its MPS demand.
const UnknownDemand = 50

// NewEstimator wraps a trained predictor for the placement loop.
func NewEstimator(p predictor.Estimator) partitioner.Estimator {
	known := map[string]bool{}
	for t := range p.Profiles {
		if _, ok := p.Model.Schema.Base[t]; ok {
			known[t] = true
		}
	}
	return &estimator{pred: p, known: known}
}

// crowdBeta is the exponent by which jobs whose MPS shares sum to S above
// 100 % each run as at their share times (100/S)^beta: the simulator's
// ground truth fitted it to the measured runs with shares above 100 %
// (docs/results/partition.md, Method).
const crowdBeta = 0.85

// Speed answers with the predictor when it knows the job's type. For an
// online job with a latency need (partitioner.Job.MinSpeed), co-runners
// the predictor cannot describe still count: their shares (as the SLO
// guard gives them: online ones at their busy share) crowd the job's as
// oversubscribed MPS shares do, so that a latency target keeps even
// jobs of unknown type off its SMs.
func (e *estimator) Speed(j partitioner.Job, sms, gpuSMs, percent int, co []partitioner.Share) (float64, error) {
	unknown := func(c partitioner.Share) bool { return !e.known[c.Job.Type] }
	crowd := 1.0
	if j.MinSpeed > 0 {
		sum := float64(percent)
		for _, c := range co {
			if unknown(c) || !e.known[j.Type] {
				sum += float64(c.Percent)
			}
		}
		if sum > 100 {
			crowd = math.Pow(100/sum, crowdBeta)
		}
	}
	if !e.known[j.Type] {
		return crowd * float64(sms) / float64(gpuSMs) * min(1, float64(percent)/UnknownDemand), nil
	}
	if slices.ContainsFunc(co, unknown) {
		co = slices.DeleteFunc(slices.Clone(co), unknown)
	}
	v, err := e.pred.Speed(j, sms, gpuSMs, percent, co)
	return crowd * v, err
}
