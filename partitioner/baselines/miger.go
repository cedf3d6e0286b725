package baselines

import (
	"fmt"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
)

// Job is a job as the baselines see it: online jobs carry their latency
// alone on the whole GPU and their latency target.
type Job struct {
	partitioner.Job
	// LatencyMs is an online job's latency alone on the whole GPU at
	// 100 %; TargetMs its latency target (MIGER's qos).
	LatencyMs, TargetMs float64
}

// MIGER's constants, from its code (node/GPU_worker.py).
const (
	// MIGERMaxJobsPerGPU is woker(max_job_per_GPU=4).
	MIGERMaxJobsPerGPU = 4
	// MIGERShareRatio: an online job whose latency in its slice is at
	// most this share of its target may host one offline job
	// (partition_optimizer: check_percentage(...) <= 0.7).
	MIGERShareRatio = 0.7
	// MIGERRetry is how often the scheduler retries the head of its queue
	// (node/Scheduler_worker.py: sleep 30, try_schedule, sleep 5).
	MIGERRetry = 35
)

// MIGER decides one GPU's layout and placements as MIGER does, from the
// estimator's speeds where MIGER reads its profiled tables.
type MIGER struct {
	Est   *partitioner.Cache
	Model *partitioner.Model
}

// MIGERPlan is MIGER's decision for one GPU and its objective: the sum of
// the offline jobs' speeds (MIGER's throughput; online jobs count
// nothing, and a GPU of online jobs only 1e-7, partition_optimizer).
type MIGERPlan struct {
	Plan       partitioner.GPUPlan
	Throughput float64
}

// onlineOnly is partition_optimizer's objective for online jobs alone.
const onlineOnly = 1e-7

// latency is an online job's latency at percent of an instance of sms SMs
// next to co.
func (m *MIGER) latency(j Job, sms, percent int, co []partitioner.Share) (float64, error) {
	s, err := m.Est.Speed(j.Job, sms, m.Model.SMs, percent, co)
	if err != nil {
		return 0, err
	}
	if s <= 0 {
		return 0, nil
	}
	return j.LatencyMs / s, nil
}

// bestFit is the smallest base profile where an online job alone meets
// its target (best_fit: average_time < qos), nil if none.
func (m *MIGER) bestFit(j Job) (*partitioner.Profile, float64, error) {
	for _, p := range BaseProfiles(m.Model) {
		if p.MemoryMiB < j.MemoryMiB {
			continue
		}
		l, err := m.latency(j, p.SMs, 100, nil)
		if err != nil {
			return nil, 0, err
		}
		if l > 0 && l < j.TargetMs {
			return p, l, nil
		}
	}
	return nil, 0, nil
}

// pair is an online job and an offline one sharing the online job's
// instance under MPS at the split that maximises the offline job's speed
// with the online job within its target (Calculated_throughput_double,
// find_optimal_SM; MIGER profiles splits summing to 100 %).
type pair struct {
	onPct int     // the online job's share; the offline job has the rest
	speed float64 // the offline job's
}

func (m *MIGER) pairSpeed(on, off Job, p *partitioner.Profile) (pair, bool, error) {
	best, ok := pair{}, false
	if on.MemoryMiB+off.MemoryMiB > p.MemoryMiB {
		return best, false, nil
	}
	for onPct := partitioner.PercentStep; onPct < 100; onPct += partitioner.PercentStep {
		offPct := 100 - onPct
		l, err := m.latency(on, p.SMs, onPct, []partitioner.Share{{Job: off.Job, Percent: offPct}})
		if err != nil {
			return best, false, err
		}
		if l <= 0 || l > on.TargetMs {
			continue
		}
		s, err := m.Est.Speed(off.Job, p.SMs, m.Model.SMs, offPct, []partitioner.Share{{Job: on.Job, Percent: onPct}})
		if err != nil {
			return best, false, err
		}
		if !ok || s > best.speed {
			best, ok = pair{onPct: onPct, speed: s}, true
		}
	}
	return best, ok, nil
}

// Optimize is MIGER's partition_optimizer for the jobs a GPU is to hold
// (its own and a new one): every online job in its best-fit slice, the
// layout among NVIDIA's (global_config_list) that holds those slices and
// maximises the offline jobs' speeds, each offline job alone in a slice
// or beside an online job that may host one. Online jobs keep their
// instances where the layout allows (check_volid, allocate_avaliable);
// cur is the GPU now. ok is false where MIGER finds no placement, or the
// GPU would hold more than MIGERMaxJobsPerGPU jobs.
func (m *MIGER) Optimize(cur partitioner.GPUPlan, jobs []Job) (MIGERPlan, bool, error) {
	if len(jobs) > MIGERMaxJobsPerGPU {
		return MIGERPlan{}, false, nil
	}
	var on, off []Job
	var slice []*partitioner.Profile
	var host []bool
	for _, j := range jobs {
		if !j.Online {
			off = append(off, j)
			continue
		}
		if j.LatencyMs <= 0 || j.TargetMs <= 0 {
			return MIGERPlan{}, false, fmt.Errorf("miger: online job %s: latency %v ms, target %v ms: want both > 0", j.ID, j.LatencyMs, j.TargetMs)
		}
		p, l, err := m.bestFit(j)
		if err != nil {
			return MIGERPlan{}, false, fmt.Errorf("miger: %w", err)
		}
		if p == nil {
			return MIGERPlan{}, false, nil
		}
		on = append(on, j)
		slice = append(slice, p)
		host = append(host, l/j.TargetMs <= MIGERShareRatio)
	}
	// Pair speeds, asked once.
	pairs := make([][]pair, len(on))
	pairOK := make([][]bool, len(on))
	for i := range on {
		pairs[i], pairOK[i] = make([]pair, len(off)), make([]bool, len(off))
		if !host[i] {
			continue
		}
		for k := range off {
			var err error
			if pairs[i][k], pairOK[i][k], err = m.pairSpeed(on[i], off[k], slice[i]); err != nil {
				return MIGERPlan{}, false, fmt.Errorf("miger: %w", err)
			}
		}
	}
	type choice struct {
		layout    partitioner.Layout
		paired    []int // per online job: the offline job beside it, -1 none
		single    []*partitioner.Profile
		objective float64
	}
	var best *choice
	for _, l := range configs(m.Model) {
		rest := slices.Clone(l.Instances)
		fits := true
		for _, p := range slice {
			k := slices.IndexFunc(rest, func(in partitioner.Instance) bool { return in.Profile == p })
			if k < 0 {
				fits = false
				break
			}
			rest = slices.Delete(rest, k, k+1)
		}
		if !fits || len(l.Instances) < len(on)+len(off)-countTrue(host) {
			continue
		}
		restProfiles := make([]*partitioner.Profile, len(rest))
		for i, in := range rest {
			restProfiles[i] = in.Profile
		}
		if len(off) == 0 {
			if best == nil {
				best = &choice{layout: l, paired: minusOnes(len(on)), objective: onlineOnly}
			}
			continue
		}
		// Every way to pair hosts with offline jobs (none included), the
		// rest of the offline jobs one per remaining slice, at best.
		paired := minusOnes(len(on))
		used := make([]bool, len(off))
		var walk func(i int, sum float64) error
		walk = func(i int, sum float64) error {
			if i == len(on) {
				var left []Job
				for k, u := range used {
					if !u {
						left = append(left, off[k])
					}
				}
				assign, s, ok, err := m.bestSingles(left, restProfiles)
				if err != nil || !ok {
					return err
				}
				if t := sum + s; best == nil || t > best.objective {
					best = &choice{layout: l, paired: slices.Clone(paired), single: assign, objective: t}
				}
				return nil
			}
			if err := walk(i+1, sum); err != nil {
				return err
			}
			for k := range off {
				if used[k] || !pairOK[i][k] {
					continue
				}
				used[k], paired[i] = true, k
				err := walk(i+1, sum+pairs[i][k].speed)
				used[k], paired[i] = false, -1
				if err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(0, 0); err != nil {
			return MIGERPlan{}, false, fmt.Errorf("miger: %w", err)
		}
	}
	if best == nil || best.objective <= 0 {
		return MIGERPlan{}, false, nil
	}
	// Online jobs keep their instances where a layout of these profiles
	// holds them; otherwise they migrate (do_migrate).
	var keep []partitioner.Instance
	for _, p := range cur.Jobs {
		if p.Job.Online && slices.ContainsFunc(on, func(j Job) bool { return j.ID == p.Job.ID }) {
			keep = append(keep, cur.Layout.Instances[p.Instance])
		}
	}
	layout := cur.Layout // the same profiles: no MIG change
	if layout.Profiles() != best.layout.Profiles() {
		layout, _ = holding(m.Model, best.layout, keep)
	}
	plan := partitioner.GPUPlan{Layout: layout}
	taken := make([]bool, len(layout.Instances))
	place := func(p *partitioner.Profile, prefer string) int {
		for i, in := range layout.Instances {
			if !taken[i] && in.Profile == p && in.String() == prefer {
				taken[i] = true
				return i
			}
		}
		for i, in := range layout.Instances {
			if !taken[i] && in.Profile == p {
				taken[i] = true
				return i
			}
		}
		return -1
	}
	for i, j := range on {
		prefer := ""
		if k := slices.IndexFunc(cur.Jobs, func(p partitioner.Placed) bool { return p.Job.ID == j.ID }); k >= 0 {
			prefer = cur.Layout.Instances[cur.Jobs[k].Instance].String()
		}
		at := place(slice[i], prefer)
		pct := 100
		if k := best.paired[i]; k >= 0 {
			pct = pairs[i][k].onPct
			plan.Jobs = append(plan.Jobs, partitioner.Placed{Job: off[k].Job, Instance: at, Percent: 100 - pct})
		}
		plan.Jobs = append(plan.Jobs, partitioner.Placed{Job: j.Job, Instance: at, Percent: pct})
	}
	k := 0
	for o, j := range off {
		if slices.Contains(best.paired, o) {
			continue
		}
		plan.Jobs = append(plan.Jobs, partitioner.Placed{Job: j.Job, Instance: place(best.single[k], ""), Percent: 100})
		k++
	}
	if err := fillSpeeds(m.Est, &plan); err != nil {
		return MIGERPlan{}, false, fmt.Errorf("miger: %w", err)
	}
	return MIGERPlan{Plan: plan, Throughput: best.objective}, true, nil
}

// bestSingles assigns each offline job its own slice among profiles,
// maximising the sum of their speeds alone there (Calculated_throughput
// over permutations); a job must fit the slice's memory.
func (m *MIGER) bestSingles(jobs []Job, profiles []*partitioner.Profile) ([]*partitioner.Profile, float64, bool, error) {
	if len(jobs) > len(profiles) {
		return nil, 0, false, nil
	}
	best, bestSum, found := []*partitioner.Profile(nil), 0.0, len(jobs) == 0
	assign := make([]*partitioner.Profile, len(jobs))
	used := make([]bool, len(profiles))
	var walk func(i int, sum float64) error
	walk = func(i int, sum float64) error {
		if i == len(jobs) {
			if !found || sum > bestSum {
				best, bestSum, found = slices.Clone(assign), sum, true
			}
			return nil
		}
		tried := map[*partitioner.Profile]bool{}
		for k, p := range profiles {
			if used[k] || tried[p] || p.MemoryMiB < jobs[i].MemoryMiB {
				continue
			}
			tried[p] = true
			s, err := m.Est.Speed(jobs[i].Job, p.SMs, m.Model.SMs, 100, nil)
			if err != nil {
				return err
			}
			used[k], assign[i] = true, p
			err = walk(i+1, sum+s)
			used[k] = false
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(0, 0); err != nil {
		return nil, 0, false, err
	}
	return best, bestSum, found, nil
}

// Load is MIGER's load of a GPU (calculate_busy_simulator): over its
// instances with jobs, the instance's share of the compute slices times
// its use, 1 for an offline job or a pair, and for an online job alone
// the smallest MPS share at which it meets its target there.
func (m *MIGER) Load(plan partitioner.GPUPlan, jobs map[string]Job) (float64, error) {
	load := 0.0
	for i, in := range plan.Layout.Instances {
		var here []partitioner.Placed
		for _, p := range plan.Jobs {
			if p.Instance == i {
				here = append(here, p)
			}
		}
		use := 0.0
		switch {
		case len(here) == 0:
			continue
		case len(here) > 1 || !here[0].Job.Online:
			use = 1
		default:
			j := jobs[here[0].Job.ID]
			use = 1
			for pct := partitioner.PercentStep; pct <= 100; pct += partitioner.PercentStep {
				l, err := m.latency(j, in.Profile.SMs, pct, nil)
				if err != nil {
					return 0, fmt.Errorf("miger load: %w", err)
				}
				if l > 0 && l < j.TargetMs {
					use = float64(pct) / 100
					break
				}
			}
		}
		load += use * float64(in.Profile.ComputeSlices) / float64(partitioner.ComputeSlices)
	}
	return load, nil
}

// fillSpeeds sets each placed job's estimated speed next to the others of
// its instance.
func fillSpeeds(est *partitioner.Cache, plan *partitioner.GPUPlan) error {
	for k, p := range plan.Jobs {
		var co []partitioner.Share
		for m, q := range plan.Jobs {
			if m != k && q.Instance == p.Instance {
				co = append(co, partitioner.Share{Job: q.Job, Percent: q.Percent})
			}
		}
		s, err := est.Speed(p.Job, plan.Layout.Instances[p.Instance].Profile.SMs, plan.Layout.Model.SMs, p.Percent, co)
		if err != nil {
			return err
		}
		plan.Jobs[k].Speed = s
	}
	return nil
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func minusOnes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = -1
	}
	return out
}
