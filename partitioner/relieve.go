package partitioner

import (
	"cmp"
	"fmt"
	"slices"
)

// Move takes an offline job off a GPU whose online jobs miss their
// latency targets to a GPU with room for it (indexes of Request.GPUs).
type Move struct {
	Job  string `json:"job"`
	From int    `json:"from"`
	To   int    `json:"to"`
	// Instance is the instance of To it is placed in, Percent its MPS
	// percentage there and Speed its predicted speed.
	Instance int     `json:"instance"`
	Percent  int     `json:"percent"`
	Speed    float64 `json:"speed"`
	// Service is the online job it relieves; Contention how much the
	// moved job alone slows it at equal priority (1 - its speed beside it
	// over its speed alone in the instance), the measure it was chosen by.
	Service    string  `json:"service"`
	Contention float64 `json:"contention"`
	// Why says it in words, for logs and job events.
	Why string `json:"why"`
}

// Relieve plans at most one move off each GPU where an online job named
// in missing runs: the offline job of its instance that contends with it
// most among those movable allows (nil: all) and some GPU takes, to the
// GPU, not its own, that takes it as Algorithm 1 would place it (room in memory and share, every online job's need kept under
// Options.SLOGuard, the least busy instance under Options.Spread),
// preferring an instance with no online job (a trainer next to other
// services would restrain them as it did these). A GPU with no such
// destination gets no move. Contention is judged at equal priority:
// client priority keeps an offline job off a service's SMs but not off
// its memory, and a target missed under it is the evidence that the
// offline job's share still matters. Pinned jobs never move.
func Relieve(req Request, est Estimator, opt Options, missing []string, movable func(job string) bool) ([]Move, error) {
	d := &decider{est: NewCache(est), opt: opt}
	gpus, err := workingCopy(req)
	if err != nil {
		return nil, err
	}
	var moves []Move
	for g := range gpus {
		m, ok, err := d.relieveOne(gpus, g, missing, movable)
		if err != nil {
			return nil, fmt.Errorf("gpu %d: %w", g, err)
		}
		if ok {
			moves = append(moves, m)
		}
	}
	return moves, nil
}

// relieveOne is the move off GPU g, if one of its online jobs misses and
// a destination takes the offline job that contends with it most; gpus
// are updated with the move, so that the next GPU's move sees it.
func (d *decider) relieveOne(gpus []GPUPlan, g int, missing []string, movable func(string) bool) (Move, bool, error) {
	gp := &gpus[g]
	var cands []moveCandidate
	for _, s := range gp.Jobs {
		if !s.Job.Online || !slices.Contains(missing, s.Job.ID) {
			continue
		}
		in := gp.Layout.Instances[s.Instance]
		alone, err := d.est.Speed(s.Job, in.Profile.SMs, gp.Layout.Model.SMs, s.Percent, nil)
		if err != nil {
			return Move{}, false, err
		}
		for _, c := range gp.Jobs {
			if c.Job.Online || c.Job.Pin != nil || c.Instance != s.Instance || movable != nil && !movable(c.Job.ID) {
				continue
			}
			beside, err := d.est.Speed(s.Job, in.Profile.SMs, gp.Layout.Model.SMs, s.Percent, []Share{{Job: c.Job, Percent: c.Percent}})
			if err != nil {
				return Move{}, false, err
			}
			con := 0.0
			if alone > 0 {
				con = 1 - beside/alone
			}
			cands = append(cands, moveCandidate{job: c.Job.ID, service: s.Job.ID, contention: con})
		}
	}
	// The most contending first; one that no GPU takes gives way to the
	// next.
	slices.SortStableFunc(cands, func(a, b moveCandidate) int { return cmp.Compare(b.contention, a.contention) })
	for _, c := range cands {
		best := Move{Job: c.job, From: g, Service: c.service, Contention: c.contention}
		ok, err := d.moveTo(gpus, g, &best)
		if err != nil || ok {
			return best, ok, err
		}
	}
	return Move{}, false, nil
}

// moveTo places best's job on the GPU destination picks, updating gpus;
// false if none takes it.
func (d *decider) moveTo(gpus []GPUPlan, g int, best *Move) (bool, error) {
	gp := &gpus[g]
	i := slices.IndexFunc(gp.Jobs, func(p Placed) bool { return p.Job.ID == best.Job })
	job, from := gp.Jobs[i].Job, gp.Jobs[i].Instance
	to, inst, next, err := d.destination(gpus, g, job)
	if err != nil || to < 0 {
		return false, err
	}
	replaceInstance(&gpus[to], inst, next)
	rest := slices.DeleteFunc(inInstance(gp, from), func(p Placed) bool { return p.Job.ID == best.Job })
	replaceInstance(gp, from, rest)
	p := gpus[to].Jobs[slices.IndexFunc(gpus[to].Jobs, func(p Placed) bool { return p.Job.ID == best.Job })]
	best.To, best.Instance, best.Percent, best.Speed = to, inst, p.Percent, p.Speed
	best.Why = fmt.Sprintf("%s misses its target on GPU %d; %s, which slows it most there of the jobs that can move (%.0f %% at equal priority), fits on GPU %d (predicted speed %.2f)",
		best.Service, g, best.Job, 100*best.Contention, to, best.Speed)
	return true, nil
}

// moveCandidate is an offline job beside a missing service, with how much it
// slows the service.
type moveCandidate struct {
	job        string
	service    string
	contention float64
}

// destination is where offline job j goes off GPU from: an instance of
// another GPU that takes it (tryAdd), one with no online job first, then
// the least busy (under Spread), then the largest gain; -1 where none.
func (d *decider) destination(gpus []GPUPlan, from int, j Job) (int, int, []Placed, error) {
	bestG, bestI, bestGain := -1, -1, 0.0
	bestOnline, bestN := false, 0.0
	var best []Placed
	for g := range gpus {
		if g == from || slices.Contains(j.Avoid, g) {
			continue
		}
		for i := range gpus[g].Layout.Instances {
			next, gain, ok, err := d.tryAdd(&gpus[g], i, j)
			if err != nil {
				return -1, -1, nil, err
			}
			if !ok {
				continue
			}
			online := slices.ContainsFunc(gpus[g].Jobs, func(p Placed) bool { return p.Instance == i && p.Job.Online })
			n := 0.0
			if d.opt.Spread {
				n = d.busyIn(gpus[g].Jobs, i, j)
			}
			better := bestG < 0 || (!online && bestOnline) ||
				(online == bestOnline && (n < bestN || (n == bestN && gain > bestGain)))
			if better {
				bestG, bestI, bestGain, bestOnline, bestN, best = g, i, gain, online, n, next
			}
		}
	}
	return bestG, bestI, best, nil
}
