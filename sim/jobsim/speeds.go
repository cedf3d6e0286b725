package jobsim

import (
	"math"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

// MaxMPSClients is the most clients one MPS server takes (Volta and
// later): plain MPS's limit on jobs per GPU.
const MaxMPSClients = 48

// decideShared places waiting jobs under default sharing or plain MPS:
// first come, first served, backfilling: each waiting job goes to the GPU
// with the most free memory that holds it.
func (s *jobSim) decideShared() {
	var still []*simJob
	for _, j := range s.pending {
		best, bestFree := -1, int64(-1)
		for g, js := range s.shared {
			free := s.cfg.Model.MemoryMiB
			for _, o := range js {
				free -= o.MemoryMiB
			}
			if free >= j.MemoryMiB && free > bestFree && (s.pol.kind != kindMPS || len(js) < MaxMPSClients) {
				best, bestFree = g, free
			}
		}
		if best < 0 {
			still = append(still, j)
			continue
		}
		j.gpu, j.paused, j.ran, j.started = best, s.now+j.startup, true, s.now
		s.shared[best] = append(s.shared[best], j)
	}
	s.pending = still
}

// prioOf is a job's MPS client priority under the policy.
func (s *jobSim) prioOf(j *simJob) int { return clientPriority(s.pol.priority(), j.Online) }

// clientPriority is the MPS client priority of a job, online or not,
// where priority runs or not: 1 (below normal) for an offline job where
// it runs, else 0.
func clientPriority(priority, online bool) int {
	if priority && !online {
		return 1
	}
	return 0
}

// idle is the share of time a running job leaves the GPU to others: a
// starting job computes nothing yet, a service between requests is idle
// unless its queue is backed up.
func (s *jobSim) idle(j *simJob) float64 {
	if !s.up(j) {
		return 1
	}
	if j.svc == nil || j.svc.backlog > 0 {
		return 0
	}
	if j.speed <= 0 {
		return 0
	}
	return 1 - min(1, j.svc.load/j.speed)
}

// speeds sets every running job's true speed and records the services'
// rates.
func (s *jobSim) speeds() {
	if s.shared != nil {
		s.sharedSpeeds()
	} else {
		s.partitionedSpeeds()
	}
	for _, j := range s.jobs {
		if j.svc == nil || j.done || j.gpu < 0 {
			continue
		}
		j.svc.setRate(s.now, j.paused, j.speed, j.shared)
	}
}

func (s *jobSim) sharedSpeeds() {
	capacity := 100.0
	if s.pol.mig {
		full := s.cfg.Model.Profiles[len(s.cfg.Model.Profiles)-1]
		capacity = 100 * float64(full.SMs) / float64(s.cfg.Model.SMs)
	}
	slicing := s.pol.kind == kindDefault
	var on []CoShare
	for _, js := range s.shared {
		fill := func() {
			on = on[:0]
			for _, j := range js {
				on = append(on, CoShare{Job: j.Type, Pct: capacity, Idle: s.idle(j), Prio: s.prioOf(j)})
			}
		}
		fill()
		shared := slices.ContainsFunc(js, func(o *simJob) bool { return !o.Online && s.up(o) })
		for k, j := range js {
			j.shared = shared
			// Under MPS each job sees its co-runners' idle shares as the
			// speeds set so far in this pass leave them (the order the
			// simulator has always used); time slicing sees them as the
			// pass began.
			if !slicing && k > 0 {
				fill()
			}
			j.speed = s.cfg.Truth.sharedGPU(slicing, capacity, on, k)
		}
	}
}

// sharedGPU is the speed of job k of the jobs on one GPU (each at the
// GPU's capacity, with its idle share and priority) under time slicing
// (slicing) or MPS without limits.
func (m *SpeedModel) sharedGPU(slicing bool, capacity float64, on []CoShare, k int) float64 {
	j := on[k]
	if slicing {
		// Time slicing: each context gets its turn; a switch costs what
		// the calibrated kernel-level GPU says.
		busy := 0.0
		for _, o := range on {
			busy += m.gpuBusy[o.Job] * o.busy()
		}
		v := m.Alone(j.Job, 100) * (1 / max(1, busy))
		if len(on) > 1 {
			gpu := sim.DefaultGPU()
			v *= gpu.Slice.Seconds() / (gpu.Slice + gpu.Switch).Seconds()
		}
		return v
	}
	// MPS without limits: every client at 100 % of the GPU, at one
	// priority (or online 0, offline 1 under mps-prio), as the ground
	// truth has it for oversubscribed shares.
	co := make([]CoShare, 0, len(on)-1)
	for i, o := range on {
		if i != k {
			co = append(co, o)
		}
	}
	return m.Shared(j.Job, capacity, capacity, j.Prio, co)
}

func (s *jobSim) partitionedSpeeds() {
	truth := s.cfg.Truth
	gpuSMs := s.cfg.Model.SMs
	prio := func(p partitioner.Placed) int { return s.prioOf(s.byID[p.Job.ID]) }
	for g, p := range s.plans {
		mps := s.miso != nil && s.miso.inPhase(g)
		for i, in := range p.Layout.Instances {
			var here []partitioner.Placed
			for _, pl := range p.Jobs {
				if pl.Instance == i {
					here = append(here, pl)
				}
			}
			frac := float64(in.Profile.SMs) / float64(gpuSMs)
			shared := slices.ContainsFunc(here, func(o partitioner.Placed) bool { return !o.Job.Online && s.up(s.byID[o.Job.ID]) })
			for _, pl := range here {
				j := s.byID[pl.Job.ID]
				j.shared = shared
				pct := float64(pl.Percent) * frac
				if s.pol.migOnly() && !mps {
					pct = 100 * frac // MIG only: no MPS limit
				}
				var co []CoShare
				for _, o := range here {
					if o.Job.ID != pl.Job.ID {
						co = append(co, CoShare{Job: o.Job.Type, Pct: float64(o.Percent) * frac, Idle: s.idle(s.byID[o.Job.ID]), Prio: prio(o)})
					}
				}
				j.speed = truth.Shared(j.Type, pct, 100*frac, prio(pl), co)
				if pl.Speed > 0 && j.speed > 0 {
					s.predErr = append(s.predErr, math.Abs(pl.Speed-j.speed)/j.speed)
				}
				if s.pol.Has(OptKernel) {
					j.speed = s.kernelEffect(j, pct, 100*frac, here, j.speed)
				}
			}
		}
	}
}

// kernelEffect applies the kernel scheduler's measured effect to a job
// sharing an instance: an online job gains the mean speed-up measured
// against its offline co-runners (never beyond its speed alone at its
// share), an offline job keeps the smallest share measured next to its
// online co-runners.
func (s *jobSim) kernelEffect(j *simJob, pct, capacity float64, here []partitioner.Placed, speed float64) float64 {
	jt, _ := trace.LookupJobType(j.Type)
	gain, n, kept := 0.0, 0, 1.0
	for _, o := range here {
		if o.Job.Online == j.Online {
			continue
		}
		ot, _ := trace.LookupJobType(o.Job.Type)
		if j.Online {
			if e, ok := s.effect[[2]string{jt.Trace, ot.Trace}]; ok {
				gain += e.OnlineSpeedup
				n++
			}
		} else if e, ok := s.effect[[2]string{ot.Trace, jt.Trace}]; ok {
			kept = min(kept, e.OfflineKept)
		}
	}
	if j.Online {
		if n == 0 {
			return speed
		}
		return min(s.cfg.Truth.inInstance(j.Type, pct, capacity), speed*gain/float64(n))
	}
	return speed * kept
}
