package jobsim

import (
	"fmt"
	"math"
	"slices"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/baselines"
)

// migerState drives MIGER (partitioner/baselines.MIGER) in time, as its
// scheduler does (node/Scheduler_worker.py): an arriving job is tried on
// the GPU of least load; one that does not fit joins a first come, first
// served queue whose head is tried again every 35 s (at 30 s, then every
// 35); a GPU is optimised again when a job on it ends
// (GPU_worker.py, job finish). A new offline job is admitted only where
// it does not lower the GPU's offline throughput.
//
// MIGER's code stops and restarts every offline job of a GPU at each of
// its decisions there (termination, creation); the simulator restarts
// only the jobs whose instance or share changes, the reading more
// favourable to MIGER.
type migerState struct {
	s          *jobSim
	m          *baselines.MIGER
	throughput []float64
	held       []int // jobs on each GPU at the last decision
	queue      []*simJob
}

func newMIGERState(s *jobSim) *migerState {
	return &migerState{s: s, m: &baselines.MIGER{Est: s.est, Model: s.cfg.Model}, throughput: make([]float64, s.cfg.GPUs), held: make([]int, s.cfg.GPUs)}
}

// migerFirstRetry is when the scheduler first tries its queue's head
// (Scheduler_worker.py: sleep 30 before the first try_schedule).
const migerFirstRetry = 30

// nextRetry is the next time after now the queue's head is tried, +Inf
// with an empty queue.
func (m *migerState) nextRetry(now float64) float64 {
	if len(m.queue) == 0 {
		return math.Inf(1)
	}
	if now < migerFirstRetry {
		return migerFirstRetry
	}
	k := math.Floor((now-migerFirstRetry)/baselines.MIGERRetry) + 1
	return migerFirstRetry + k*baselines.MIGERRetry
}

// due reports whether now is a retry time with a queue.
func (m *migerState) due(now float64) bool {
	if len(m.queue) == 0 || now < migerFirstRetry {
		return false
	}
	k := math.Round((now - migerFirstRetry) / baselines.MIGERRetry)
	return math.Abs(migerFirstRetry+k*baselines.MIGERRetry-now) < 1e-6
}

// job is a simulated job as MIGER sees it.
func (m *migerState) job(j *simJob) baselines.Job {
	b := baselines.Job{Job: partJob(j)}
	if j.svc != nil {
		b.LatencyMs, b.TargetMs = j.svc.latency*1000, j.svc.target*1000
	}
	return b
}

// on is the jobs on GPU g, as MIGER sees them.
func (m *migerState) on(g int) []baselines.Job {
	var out []baselines.Job
	for _, p := range m.s.plans[g].Jobs {
		out = append(out, m.job(m.s.byID[p.Job.ID]))
	}
	return out
}

// leastLoaded is get_min_load: the GPU of least load, the first of equals.
func (m *migerState) leastLoaded() (int, error) {
	best, bestLoad := 0, math.Inf(1)
	for g := range m.s.plans {
		jobs := map[string]baselines.Job{}
		for _, j := range m.on(g) {
			jobs[j.ID] = j
		}
		l, err := m.m.Load(m.s.plans[g], jobs)
		if err != nil {
			return 0, err
		}
		if l < bestLoad {
			best, bestLoad = g, l
		}
	}
	return best, nil
}

// try places j on the GPU of least load if MIGER admits it there.
func (m *migerState) try(j *simJob) (bool, error) {
	g, err := m.leastLoaded()
	if err != nil {
		return false, err
	}
	p, ok, err := m.m.Optimize(m.s.plans[g], append(m.on(g), m.job(j)))
	if err != nil || !ok {
		return false, err
	}
	if !j.Online && p.Throughput < m.throughput[g] {
		return false, nil
	}
	return true, m.adopt(g, p)
}

// adopt carries out a GPU's new plan.
func (m *migerState) adopt(g int, p baselines.MIGERPlan) error {
	ch, err := partitioner.Change(g, m.s.plans[g], p.Plan)
	if err != nil {
		return fmt.Errorf("miger: %w", err)
	}
	m.s.apply(p.Plan, ch)
	m.s.plans[g] = p.Plan
	m.throughput[g] = p.Throughput
	return nil
}

func (m *migerState) decide() error {
	// A job ended: optimise its GPU again.
	for g := range m.s.plans {
		if n := len(m.s.plans[g].Jobs); n < m.held[g] && n > 0 {
			p, ok, err := m.m.Optimize(m.s.plans[g], m.on(g))
			if err != nil {
				return err
			}
			if ok {
				if err := m.adopt(g, p); err != nil {
					return err
				}
			}
		} else if n == 0 {
			m.throughput[g] = 0
		}
	}
	// Arrivals are tried at once, whatever waits (start_cluster).
	for _, j := range m.s.pending {
		ok, err := m.try(j)
		if err != nil {
			return err
		}
		if !ok {
			m.queue = append(m.queue, j)
		}
	}
	m.s.pending = nil
	// The queue's head, once per retry (try_schedule).
	if m.due(m.s.now) {
		ok, err := m.try(m.queue[0])
		if err != nil {
			return err
		}
		if ok {
			m.queue = m.queue[1:]
		}
	}
	for g := range m.s.plans {
		m.held[g] = len(m.s.plans[g].Jobs)
	}
	return nil
}

// misoState drives MISO (partitioner/baselines.MISO) in time, as its
// controller does (exp_miso.py): jobs wait first come, first served and
// the head blocks the queue (strict FIFO); the head goes to the GPU with
// the fewest jobs among those whose largest allowed slice holds it. Alone
// on its GPU a job starts at once on the whole GPU. Otherwise the GPU's
// jobs are checkpointed and all run under MPS for 30 s (the MPS phase, in
// which MISO learns their speeds and the GPU takes no other job), then
// are checkpointed again and resumed in the layout of least mean
// slowdown. When a job ends and nothing waits, a GPU with an idle slice
// is partitioned again for the jobs left (checkpoint, MIG change,
// resume), or reset to the whole GPU when empty. A job no slice can hold
// is left out of the queue (MISO's code has no answer for it).
type misoState struct {
	s     *jobSim
	m     *baselines.MISO
	queue []*simJob
	phase []misoPhase
	whole partitioner.Layout
}

// misoPhase is a GPU's MPS phase: until when, and the plan after it.
type misoPhase struct {
	active bool
	until  float64
	target partitioner.GPUPlan
}

func newMISOState(s *jobSim) *misoState {
	return &misoState{s: s, m: &baselines.MISO{Est: s.est, Model: s.cfg.Model}, phase: make([]misoPhase, s.cfg.GPUs), whole: s.plans[0].Layout}
}

func (m *misoState) inPhase(g int) bool { return m.phase[g].active }

func (m *misoState) nextPhaseEnd() float64 {
	t := math.Inf(1)
	for _, p := range m.phase {
		if p.active {
			t = min(t, p.until)
		}
	}
	return t
}

func (m *misoState) phaseDue(now float64) bool { return m.nextPhaseEnd() <= now+1e-9 }

// jobsOn lists GPU g's jobs.
func (m *misoState) jobsOn(g int) []partitioner.Job {
	var out []partitioner.Job
	for _, p := range m.s.plans[g].Jobs {
		out = append(out, p.Job)
	}
	return out
}

// moveAll carries out a plan in which every job of the GPU was
// checkpointed first (save_jobs): each restarts, with the MIG change.
func (m *misoState) moveAll(g int, next partitioner.GPUPlan) error {
	ch, err := partitioner.Change(g, m.s.plans[g], next)
	if err != nil {
		return fmt.Errorf("miso: %w", err)
	}
	ch.Restart = nil
	for _, p := range next.Jobs {
		if !slices.Contains(ch.Start, p.Job.ID) {
			ch.Restart = append(ch.Restart, p.Job.ID)
		}
	}
	m.s.apply(next, ch)
	m.s.plans[g] = next
	return nil
}

func (m *misoState) decide() error {
	// MPS phases that ended: checkpoint, MIG change, resume in the plan
	// (without the jobs that ended meanwhile).
	for g := range m.phase {
		p := &m.phase[g]
		if !p.active || p.until > m.s.now+1e-9 {
			continue
		}
		p.active = false
		target := p.target
		target.Jobs = slices.DeleteFunc(slices.Clone(target.Jobs), func(q partitioner.Placed) bool { return m.s.byID[q.Job.ID].done })
		if err := m.moveAll(g, target); err != nil {
			return err
		}
	}
	m.queue = append(m.queue, m.s.pending...)
	m.s.pending = nil
	for len(m.queue) > 0 {
		h := m.queue[0]
		need := m.m.MinSlice(partJob(h))
		if need == nil {
			// No slice holds it (MISO's code has no answer): it never
			// runs, and does not block the queue.
			m.queue = m.queue[1:]
			continue
		}
		best := -1
		for g := range m.s.plans {
			if m.inPhase(g) {
				continue
			}
			jobs := m.jobsOn(g)
			allowed := m.m.MaxAllowed(jobs)
			if allowed == nil || allowed.ComputeSlices < need.ComputeSlices {
				continue
			}
			if best < 0 || len(jobs) < len(m.s.plans[best].Jobs) {
				best = g
			}
		}
		if best < 0 {
			break // strict first come, first served
		}
		jobs := append(m.jobsOn(best), partJob(h))
		plan, ok, err := m.m.Optimize(m.s.plans[best].Layout, jobs)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		m.queue = m.queue[1:]
		if len(jobs) == 1 {
			// Alone on its GPU: it starts at once, nothing to restart.
			if err := m.moveAll(best, plan); err != nil {
				return err
			}
			continue
		}
		// The MPS phase: every job on the whole GPU at 100 %.
		mps := partitioner.GPUPlan{Layout: m.whole}
		for _, j := range jobs {
			mps.Jobs = append(mps.Jobs, partitioner.Placed{Job: j, Instance: 0, Percent: 100})
		}
		if err := m.moveAll(best, mps); err != nil {
			return err
		}
		m.phase[best] = misoPhase{active: true, until: m.s.now + baselines.MISOProfileSeconds, target: plan}
	}
	if len(m.queue) > 0 {
		return nil
	}
	// Nothing waits: GPUs with an idle slice are partitioned again.
	for g := range m.s.plans {
		cur := m.s.plans[g]
		if m.inPhase(g) || len(cur.Jobs) == len(cur.Layout.Instances) {
			continue
		}
		if len(cur.Jobs) == 0 {
			if !cur.Layout.Equal(m.whole) {
				if err := m.moveAll(g, partitioner.GPUPlan{Layout: m.whole}); err != nil {
					return err
				}
			}
			continue
		}
		plan, ok, err := m.m.Optimize(cur.Layout, m.jobsOn(g))
		if err != nil {
			return err
		}
		if !ok || plan.Layout.Profiles() == cur.Layout.Profiles() {
			continue
		}
		if err := m.moveAll(g, plan); err != nil {
			return err
		}
	}
	return nil
}
