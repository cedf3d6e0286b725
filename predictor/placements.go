package predictor

import (
	"cmp"
	"iter"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
)

// Placements counts the co-located groups of plans, as runs of a
// whole-GPU profiling campaign: each instance holding two or more jobs
// becomes a run of those jobs, each at the whole-GPU percentage that
// gives it as many SMs (WholeGPUPercent) rounded to the nearest of the
// campaign's alone percentages, at the client priority mmkd gives it
// (AsPlaced). The campaign runs on the whole GPU (MIG may not be changed
// there), so a MIG slice's own memory bandwidth and L2 are not what is
// measured: the same approximation as the Estimator's.
type Placements struct {
	// Percents are the campaign's alone percentages, sorted.
	Percents []int
	count    map[string]int
	runs     map[string]Run
}

// NewPlacements counts groups for a campaign with these alone
// percentages (at least one).
func NewPlacements(percents []int) *Placements {
	p := slices.Sorted(slices.Values(percents))
	return &Placements{Percents: slices.Compact(p), count: map[string]int{}, runs: map[string]Run{}}
}

// Add counts the co-located groups of a plan.
func (p *Placements) Add(plan *partitioner.Plan) {
	for _, g := range plan.GPUs {
		gpuSMs := 0
		if g.Layout.Model != nil {
			gpuSMs = g.Layout.Model.SMs
		}
		byInst := map[int]Run{}
		for _, pl := range g.Jobs {
			sms := gpuSMs
			if pl.Instance < len(g.Layout.Instances) && g.Layout.Instances[pl.Instance].Profile != nil {
				sms = g.Layout.Instances[pl.Instance].Profile.SMs
			}
			pct := p.nearest(WholeGPUPercent(pl.Percent, sms, gpuSMs))
			byInst[pl.Instance] = append(byInst[pl.Instance], Member{Job: pl.Job.Type, Percent: pct})
		}
		for _, r := range byInst {
			if len(r) < 2 {
				continue
			}
			r = AsPlaced(r)
			k := r.Key()
			p.count[k]++
			p.runs[k] = r
		}
	}
}

// nearest is the alone percentage closest to pct (the lower on a tie).
func (p *Placements) nearest(pct int) int {
	q, _ := nearestPercent(slices.Values(p.Percents), pct)
	return q
}

// nearestPercent is the one of ps closest to pct, the lower on a tie;
// false when ps is empty.
func nearestPercent(ps iter.Seq[int], pct int) (int, bool) {
	best, bestD := 0, -1
	for q := range ps {
		d := q - pct
		if d < 0 {
			d = -d
		}
		if bestD < 0 || d < bestD || (d == bestD && q < best) {
			best, bestD = q, d
		}
	}
	return best, bestD >= 0
}

// Top is the groups seen most often first (ties by key), at most n (0:
// all), with how often each was seen.
func (p *Placements) Top(n int) ([]Run, []int) {
	keys := make([]string, 0, len(p.count))
	for k := range p.count {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(p.count[b], p.count[a]), cmp.Compare(a, b)) })
	if n > 0 && len(keys) > n {
		keys = keys[:n]
	}
	runs, counts := make([]Run, len(keys)), make([]int, len(keys))
	for i, k := range keys {
		runs[i], counts[i] = p.runs[k], p.count[k]
	}
	return runs, counts
}
