package baselines

import (
	"fmt"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
)

// MISO's constants, from its code (exp_miso.py).
const (
	// MISOProfileSeconds is the MPS phase a GPU spends on each arrival
	// that joins running jobs: every job runs under MPS while MISO
	// learns its speeds (check_mps_finish(mps_time=30)).
	MISOProfileSeconds = 30
)

// MISO decides one GPU's layout as MISO does: one job per slice, the
// layout with exactly as many slices as jobs that minimises the jobs'
// mean slowdown (miso_optimize), from the estimator's speeds where MISO
// predicts them from the MPS phase.
type MISO struct {
	Est   *partitioner.Cache
	Model *partitioner.Model
}

// MinSlice is the smallest base profile whose memory holds the job (MISO
// leaves out of perf_dict the slices a job runs out of memory in), nil
// if none does.
func (m *MISO) MinSlice(j partitioner.Job) *partitioner.Profile {
	for _, p := range BaseProfiles(m.Model) {
		if p.MemoryMiB >= j.MemoryMiB {
			return p
		}
	}
	return nil
}

// MaxAllowed is the largest slice a new job may get on a GPU holding
// jobs (update_max_allowed): the largest base profile that, with each
// job's smallest slice, some layout of NVIDIA's table holds, counted
// slice size by slice size; nil when no new job fits ('full').
func (m *MISO) MaxAllowed(jobs []partitioner.Job) *partitioner.Profile {
	need := map[*partitioner.Profile]int{}
	for _, j := range jobs {
		p := m.MinSlice(j)
		if p == nil {
			return nil
		}
		need[p]++
	}
	profiles := BaseProfiles(m.Model)
	layouts := configs(m.Model)
	for k := len(profiles) - 1; k >= 0; k-- {
		p := profiles[k]
		need[p]++
		for _, l := range layouts {
			if holdsCounts(l, need) {
				return p
			}
		}
		need[p]--
	}
	return nil
}

// holdsCounts reports whether layout l has, of each profile, at least
// the count asked.
func holdsCounts(l partitioner.Layout, need map[*partitioner.Profile]int) bool {
	for p, n := range need {
		c := 0
		for _, in := range l.Instances {
			if in.Profile == p {
				c++
			}
		}
		if c < n {
			return false
		}
	}
	return true
}

// Optimize is miso_optimize for the jobs a GPU is to hold: over the
// layouts of NVIDIA's table with exactly one slice per job and every
// assignment of jobs to slices (a job only where its memory fits), the
// one of least mean slowdown, a job's slowdown its speed on the whole
// GPU (7g) over its speed in its slice. The layout in place is kept when
// it has the chosen profiles. ok is false where no layout has as many
// slices as jobs or no assignment fits.
func (m *MISO) Optimize(cur partitioner.Layout, jobs []partitioner.Job) (partitioner.GPUPlan, bool, error) {
	n := len(jobs)
	if n == 0 {
		return partitioner.GPUPlan{Layout: cur}, true, nil
	}
	whole := BaseProfiles(m.Model)
	full := whole[len(whole)-1]
	speed := func(j partitioner.Job, p *partitioner.Profile) (float64, error) {
		return m.Est.Speed(j, p.SMs, m.Model.SMs, 100, nil)
	}
	base := make([]float64, n)
	for i, j := range jobs {
		s, err := speed(j, full)
		if err != nil {
			return partitioner.GPUPlan{}, false, fmt.Errorf("miso: %w", err)
		}
		base[i] = s
	}
	var bestLayout partitioner.Layout
	var bestAssign []int
	least := 0.0
	for _, l := range configs(m.Model) {
		if len(l.Instances) != n {
			continue
		}
		assign := make([]int, n) // job -> instance
		used := make([]bool, n)
		var walk func(i int, sum float64) error
		walk = func(i int, sum float64) error {
			if i == n {
				if mean := sum / float64(n); bestAssign == nil || mean < least {
					least, bestLayout, bestAssign = mean, l, slices.Clone(assign)
				}
				return nil
			}
			for k, in := range l.Instances {
				if used[k] || in.Profile.MemoryMiB < jobs[i].MemoryMiB {
					continue
				}
				s, err := speed(jobs[i], in.Profile)
				if err != nil {
					return err
				}
				if s <= 0 {
					continue
				}
				used[k], assign[i] = true, k
				err = walk(i+1, sum+base[i]/s)
				used[k] = false
				if err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(0, 0); err != nil {
			return partitioner.GPUPlan{}, false, fmt.Errorf("miso: %w", err)
		}
	}
	if bestAssign == nil {
		return partitioner.GPUPlan{}, false, nil
	}
	layout := bestLayout
	if cur.Model == layout.Model && cur.Profiles() == layout.Profiles() {
		// Same profiles: map each job to an instance of its profile in
		// the layout in place.
		remap := make([]int, len(layout.Instances))
		taken := make([]bool, len(cur.Instances))
		for k, in := range layout.Instances {
			for c, ci := range cur.Instances {
				if !taken[c] && ci.Profile == in.Profile {
					taken[c], remap[k] = true, c
					break
				}
			}
		}
		for i := range bestAssign {
			bestAssign[i] = remap[bestAssign[i]]
		}
		layout = cur
	}
	plan := partitioner.GPUPlan{Layout: layout}
	for i, j := range jobs {
		plan.Jobs = append(plan.Jobs, partitioner.Placed{Job: j, Instance: bestAssign[i], Percent: 100})
	}
	if err := fillSpeeds(m.Est, &plan); err != nil {
		return partitioner.GPUPlan{}, false, fmt.Errorf("miso: %w", err)
	}
	return plan, true, nil
}
