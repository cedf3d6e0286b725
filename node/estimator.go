package node

import (
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
// contention features: it has no profile to describe them. Both are
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

// Speed answers with the predictor when it knows the job's type.
func (e *estimator) Speed(j partitioner.Job, sms, gpuSMs, percent int, co []partitioner.Share) (float64, error) {
	if !e.known[j.Type] {
		return float64(sms) / float64(gpuSMs) * min(1, float64(percent)/UnknownDemand), nil
	}
	unknown := func(c partitioner.Share) bool { return !e.known[c.Job.Type] }
	if slices.ContainsFunc(co, unknown) {
		co = slices.DeleteFunc(slices.Clone(co), unknown)
	}
	return e.pred.Speed(j, sms, gpuSMs, percent, co)
}
