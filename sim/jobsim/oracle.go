package jobsim

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
)

// oracle is the ground truth asked as the partitioner's estimator
// (OptOracle): what Algorithm 1 decides with a predictor that knows how
// fast every job runs, an upper bound that no real predictor reaches.
// It knows what the predictor is never told: how busy services are (a
// service between requests leaves its share to others) and the MPS
// client priority the policy runs jobs at. A service counts as busy by
// its type's mean request load in the workload, not its own: the
// partitioner's Cache keys answers by job type, so an estimator's answer
// may depend on a job's type only.
//
// With sigma > 0 each answer is off by a factor exp(sigma·z), z a
// standard normal drawn from the question (the job's type, share and
// instance and its co-runners' types and shares), so that the same
// question always gets the same error, as from a trained model: a
// predictor of a known error, to find how good mmk's must be.
type oracle struct {
	truth *SpeedModel
	// busy is the fraction of time a service of each type is at work: the
	// mean request load (the work it brings at speed 1) of the type's
	// services.
	busy map[string]float64
	// prio: offline jobs run at MPS client priority 1.
	prio  bool
	sigma float64
	seed  uint64
}

var (
	_ partitioner.Estimator = (*oracle)(nil)
	_ partitioner.LoadAware = (*oracle)(nil)
)

// KnowsLoad is true: the oracle counts a service co-runner at its busy
// share (partitioner.LoadAware).
func (o *oracle) KnowsLoad() bool { return true }

// newOracle is the ground truth as s's estimator, with error sigma.
func newOracle(s *jobSim, sigma float64) *oracle {
	o := &oracle{truth: s.cfg.Truth, busy: map[string]float64{}, prio: s.pol.priority(), sigma: sigma, seed: s.cfg.Seed}
	n := map[string]int{}
	for _, j := range s.jobs {
		if j.svc != nil {
			o.busy[j.Type] += j.svc.load
			n[j.Type]++
		}
	}
	for t, c := range n {
		o.busy[t] = min(1, o.busy[t]/float64(c))
	}
	return o
}

// priority is the MPS client priority j runs at.
func (o *oracle) priority(j partitioner.Job) int { return clientPriority(o.prio, j.Online) }

// Speed is the ground truth's speed of j at percent of an instance of sms
// SMs next to co, each co-runner counted with its busy fraction and
// priority (as the simulator counts them, speeds.go), times the error.
func (o *oracle) Speed(j partitioner.Job, sms, gpuSMs, percent int, co []partitioner.Share) (float64, error) {
	if sms <= 0 || gpuSMs <= 0 {
		return 0, fmt.Errorf("oracle: instance of %d SMs on a GPU of %d: want both > 0", sms, gpuSMs)
	}
	if !o.truth.Has(j.Type) {
		return 0, fmt.Errorf("oracle: job %s: unknown type %q", j.ID, j.Type)
	}
	frac := float64(sms) / float64(gpuSMs)
	cs := make([]CoShare, 0, len(co))
	for _, c := range co {
		if !o.truth.Has(c.Job.Type) {
			return 0, fmt.Errorf("oracle: co-runner %s: unknown type %q", c.Job.ID, c.Job.Type)
		}
		idle := 0.0
		if b, ok := o.busy[c.Job.Type]; ok && c.Job.Online {
			idle = 1 - b
		}
		cs = append(cs, CoShare{Job: c.Job.Type, Pct: float64(c.Percent) * frac, Idle: idle, Prio: o.priority(c.Job)})
	}
	v := o.truth.Shared(j.Type, float64(percent)*frac, 100*frac, o.priority(j), cs)
	if o.sigma > 0 {
		v *= math.Exp(o.sigma * o.draw(j, sms, percent, cs))
	}
	return v, nil
}

// draw is the standard normal of one question: the same question, in
// any order of its co-runners, draws the same number.
func (o *oracle) draw(j partitioner.Job, sms, percent int, co []CoShare) float64 {
	co = slices.Clone(co)
	slices.SortFunc(co, func(a, b CoShare) int { return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Pct, b.Pct)) })
	h := fnv.New64a()
	fmt.Fprintf(h, "%s@%d/%d", j.Type, percent, sms)
	for _, c := range co {
		fmt.Fprintf(h, "+%s@%g", c.Job, c.Pct)
	}
	return rand.New(rand.NewPCG(h.Sum64(), o.seed)).NormFloat64()
}
