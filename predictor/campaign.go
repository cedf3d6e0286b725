package predictor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Member is one job of a profiling run at its MPS percentage and client
// priority.
type Member struct {
	Job     string
	Percent int
	// Priority is the job's CUDA_MPS_CLIENT_PRIORITY: 0 normal (CUDA's
	// default), 1 below normal.
	Priority int
}

// key is the member's part of a run's key: "job@pct", and "/p1" for
// priority 1.
func (m Member) key() string {
	k := m.Job + "@" + strconv.Itoa(m.Percent)
	if m.Priority != 0 {
		k += "/p" + strconv.Itoa(m.Priority)
	}
	return k
}

// Run is one step of a profiling campaign: jobs that run together under
// MPS (one job: alone).
type Run []Member

// Key names a run: its members sorted, "job@pct[/p1]" joined by "+". It
// names a configuration: the repetitions of a run share it.
func (r Run) Key() string {
	parts := make([]string, len(r))
	for i, m := range r {
		parts[i] = m.key()
	}
	slices.Sort(parts)
	return strings.Join(parts, "+")
}

// ParseRunKey is the inverse of Key.
func ParseRunKey(key string) (Run, error) {
	var r Run
	for _, p := range strings.Split(key, "+") {
		head, prio, hasPrio := strings.Cut(p, "/p")
		job, pct, ok := strings.Cut(head, "@")
		n, err := strconv.Atoi(pct)
		if !ok || job == "" || err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("run %q: part %q is not JOB@PERCENT[/pPRIORITY]", key, p)
		}
		m := Member{Job: job, Percent: n}
		if hasPrio {
			if m.Priority, err = strconv.Atoi(prio); err != nil || m.Priority < 0 || m.Priority > 1 {
				return nil, fmt.Errorf("run %q: part %q: priority %q is not 0 or 1", key, p, prio)
			}
		}
		r = append(r, m)
	}
	return r, nil
}

// Without is the run's other members: r less one member that is job at
// percent and priority (an error if there is none).
func (r Run) Without(job string, percent, priority int) (Run, error) {
	i := slices.Index(r, Member{Job: job, Percent: percent, Priority: priority})
	if i < 0 {
		return nil, fmt.Errorf("run %s has no member %s", r.Key(), Member{job, percent, priority}.key())
	}
	return slices.Delete(slices.Clone(r), i, i+1), nil
}

// Step is one measurement of a campaign: a run and its repetition.
type Step struct {
	Run Run
	Rep int
}

// ID names a step: StepID of its run's key.
func (s Step) ID() string { return StepID(s.Run.Key(), s.Rep) }

// StepID names repetition rep of the run with this key: the key, and
// "#rep" after the first.
func StepID(key string, rep int) string {
	if rep == 0 {
		return key
	}
	return key + "#" + strconv.Itoa(rep)
}

// Priorities says which MPS client priorities a campaign's co-located
// runs take.
type Priorities string

const (
	// PrioritiesNone runs every member at priority 0, as CUDA does
	// without CUDA_MPS_CLIENT_PRIORITY.
	PrioritiesNone Priorities = "none"
	// PrioritiesMixed runs half the co-located runs as mmkd places jobs
	// under MPS (online jobs at 0, offline jobs at 1) and half at 0.
	PrioritiesMixed Priorities = "mixed"
)

// Steps repeats runs reps times, the repetitions interleaved rather than
// back to back: first every run once in the given order (the alone runs
// that give the others their features come first), then each further
// repetition of every run in an order shuffled from the seed, so that a
// drift of the machine spreads over all configurations instead of
// falling on one configuration's repetitions.
func Steps(runs []Run, reps int, seed uint64) []Step {
	out := make([]Step, 0, len(runs)*max(reps, 1))
	for _, r := range runs {
		out = append(out, Step{Run: r})
	}
	rng := rand.New(rand.NewPCG(seed, 0x726570))
	for rep := 1; rep < reps; rep++ {
		for _, i := range rng.Perm(len(runs)) {
			out = append(out, Step{Run: runs[i], Rep: rep})
		}
	}
	return out
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
	// Priorities are the co-located runs' client priorities (default
	// PrioritiesNone).
	Priorities Priorities
	// Placements are co-located runs to measure before the drawn ones:
	// the groups Algorithm 1 placed together in simulation
	// (Placements.Top). Members whose job type is not in Jobs are
	// an error.
	Placements []Run
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
	switch spec.Priorities {
	case "", PrioritiesNone, PrioritiesMixed:
	default:
		return nil, fmt.Errorf("plan: priorities %q is not %s or %s", spec.Priorities, PrioritiesNone, PrioritiesMixed)
	}
	for _, r := range spec.Placements {
		for _, m := range r {
			if !slices.Contains(spec.Jobs, m.Job) {
				return nil, fmt.Errorf("plan: placement %s: job type %s is not one of the campaign's jobs", r.Key(), m.Job)
			}
			if !slices.Contains(spec.AlonePercents, m.Percent) {
				return nil, fmt.Errorf("plan: placement %s: %s at %d %% is not at an alone percentage %v (its co-runners' features)", r.Key(), m.Job, m.Percent, spec.AlonePercents)
			}
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
		add(Run{{Job: j, Percent: 100}})
	}
	for _, j := range spec.Jobs {
		for _, p := range spec.AlonePercents {
			add(Run{{Job: j, Percent: p}})
		}
	}
	for _, r := range spec.Placements {
		add(r)
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6d6d6b))
	pcts := slices.Clone(spec.AlonePercents)
	slices.Sort(pcts)
	pcts = slices.Compact(pcts)
	drawn := 0
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
			r, ok := drawRun(rng, spec.Jobs, pcts, group.size, budget)
			if ok && spec.Priorities == PrioritiesMixed && drawn%2 == 0 {
				r = AsPlaced(r)
			}
			if ok && add(r) {
				made++
				drawn++
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

// AsPlaced is the run with the client priorities mmkd gives under MPS:
// online jobs 0, offline jobs 1.
func AsPlaced(r Run) Run {
	out := slices.Clone(r)
	for i := range out {
		out[i].Priority = 0
		if KindOf(out[i].Job) == Offline {
			out[i].Priority = 1
		}
	}
	return out
}
