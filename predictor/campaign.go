package predictor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Member is one job of a profiling run at its MPS percentage.
type Member struct {
	Job     string
	Percent int
}

// Run is one step of a profiling campaign: jobs that run together under
// MPS (one job: alone).
type Run []Member

// Key names a run: its members sorted, "job@pct" joined by "+".
func (r Run) Key() string {
	parts := make([]string, len(r))
	for i, m := range r {
		parts[i] = m.Job + "@" + strconv.Itoa(m.Percent)
	}
	slices.Sort(parts)
	return strings.Join(parts, "+")
}

// ParseRunKey is the inverse of Key.
func ParseRunKey(key string) (Run, error) {
	var r Run
	for _, p := range strings.Split(key, "+") {
		job, pct, ok := strings.Cut(p, "@")
		n, err := strconv.Atoi(pct)
		if !ok || job == "" || err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("run %q: part %q is not JOB@PERCENT", key, p)
		}
		r = append(r, Member{Job: job, Percent: n})
	}
	return r, nil
}

// PlanSpec says what a campaign measures.
type PlanSpec struct {
	Jobs []string
	// AlonePercents are the MPS percentages each job runs alone at; 100
	// must be one of them (it gives the job's features).
	AlonePercents []int
	// Pairs and Triples are how many co-located runs of 2 and 3 jobs.
	Pairs, Triples int
	Seed           uint64
}

// Plan lists the runs of a campaign in the order to run them: every job
// alone at 100 %, then alone at the other percentages, then the
// co-located runs, drawn from the seed: distinct jobs, each at one of the
// alone percentages (so its co-runners' features are measured), half of
// the runs summing to at most 100 % and half oversubscribing the GPU, as
// MPS allows. Keys do not repeat.
func Plan(spec PlanSpec) ([]Run, error) {
	if len(spec.Jobs) < 3 && spec.Triples > 0 || len(spec.Jobs) < 2 && spec.Pairs > 0 {
		return nil, fmt.Errorf("plan: %d jobs cannot make pairs and triples", len(spec.Jobs))
	}
	if !slices.Contains(spec.AlonePercents, 100) {
		return nil, fmt.Errorf("plan: alone percentages %v must include 100", spec.AlonePercents)
	}
	for _, p := range spec.AlonePercents {
		if p < 1 || p > 100 {
			return nil, fmt.Errorf("plan: alone percentage %d is outside 1..100", p)
		}
	}
	var runs []Run
	seen := map[string]bool{}
	add := func(r Run) bool {
		if seen[r.Key()] {
			return false
		}
		seen[r.Key()] = true
		runs = append(runs, r)
		return true
	}
	for _, j := range spec.Jobs {
		add(Run{{j, 100}})
	}
	for _, j := range spec.Jobs {
		for _, p := range spec.AlonePercents {
			add(Run{{j, p}})
		}
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6d6d6b))
	pcts := slices.Clone(spec.AlonePercents)
	slices.Sort(pcts)
	pcts = slices.Compact(pcts)
	for _, group := range []struct{ size, count int }{{2, spec.Pairs}, {3, spec.Triples}} {
		for made, tries := 0, 0; made < group.count; tries++ {
			if tries > 100*group.count+1000 {
				return nil, fmt.Errorf("plan: cannot draw %d distinct runs of %d jobs from %d jobs", group.count, group.size, len(spec.Jobs))
			}
			// Half the runs fit the GPU (percentages summing to at most
			// 100), half oversubscribe it, as MPS allows.
			budget := 100
			if made%2 == 1 || group.size*pcts[0] > budget {
				budget = 100 * group.size
			}
			if r, ok := drawRun(rng, spec.Jobs, pcts, group.size, budget); ok && add(r) {
				made++
			}
		}
	}
	return runs, nil
}

// drawRun draws size distinct jobs at percentages from pcts (sorted) that
// sum to at most budget; ok is false when the draw does not fit.
func drawRun(rng *rand.Rand, jobs []string, pcts []int, size, budget int) (Run, bool) {
	perm := rng.Perm(len(jobs))[:size]
	r := make(Run, size)
	left := budget
	for i, ji := range perm {
		// Leave the smallest percentage for each later member.
		most := left - (size-1-i)*pcts[0]
		n := 0
		for n < len(pcts) && pcts[n] <= most {
			n++
		}
		if n == 0 {
			return nil, false
		}
		p := pcts[rng.IntN(n)]
		left -= p
		r[i] = Member{Job: jobs[ji], Percent: p}
	}
	return r, true
}
