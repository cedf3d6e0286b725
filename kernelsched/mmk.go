package kernelsched

import (
	"cmp"
	"slices"
	"time"
)

// mmk is MMK's kernel scheduling (Listing 1), as the issue states it (the
// paper's text was not at hand):
//
//   - An online task's kernel is launched at once. If it fails the
//     contention check (its SM, shared-memory or bandwidth demand exceeds
//     what the released kernels of other tasks leave free), offline kernels
//     are stopped from contending until it completes.
//   - An offline task's kernel launches when it passes the check and no
//     online kernel is contended, or when its wait exceeds
//     Thres = SK / MPS_limit, where the wait accumulates the predicted
//     durations of the online kernels launched while it waited. A kernel
//     without a profile uses Epsilon as its duration.
//   - Offline tasks are served by priority, then in arrival order, and each
//     keeps at most Inflight kernels released.
//
// With fill set it is fikit+mmk: FIKIT's holders and gap filling run
// first; kernels of lower priorities that fit no gap fall back to the
// contention-checked launch.
type mmk struct {
	hooks
	fill bool
	fk   fikit
	// waited is, per task, the online work launched while its head launch
	// (headSeq) waited; a new head starts from zero.
	waited  []time.Duration
	headSeq []uint64
	// contended are the online kernels released that failed the check.
	contended []contendedKernel
	scratch   []*Task
}

type contendedKernel struct {
	task TaskID
	seq  uint64
}

func newMMK(fill bool) *mmk { return &mmk{fill: fill} }

func (m *mmk) Name() string {
	if m.fill {
		return "fikit+mmk"
	}
	return "mmk"
}

func (m *mmk) TaskAdded(_ *Scheduler, t *Task) {
	m.waited = atID(m.waited, t.ID, 0)
	m.headSeq = atID(m.headSeq, t.ID, 0)
}

// TaskRemoved forgets the removed task's contended kernels: they will
// never complete.
func (m *mmk) TaskRemoved(_ *Scheduler, t *Task) {
	m.contended = slices.DeleteFunc(m.contended, func(c contendedKernel) bool { return c.task == t.ID })
}

func (m *mmk) Completed(_ *Scheduler, t *Task, seq uint64, _ time.Duration) {
	if i := slices.Index(m.contended, contendedKernel{t.ID, seq}); i >= 0 {
		m.contended = slices.Delete(m.contended, i, i+1)
	}
}

// wait returns the online work t's head launch has waited, starting a new
// count when the head changed since the last look.
func (m *mmk) wait(t *Task) *time.Duration {
	if seq := t.pending[t.head].Seq; m.headSeq[t.ID] != seq {
		m.headSeq[t.ID], m.waited[t.ID] = seq, 0
	}
	return &m.waited[t.ID]
}

// Threshold is MMK's Thres for an offline launch of task t: its
// predicted duration divided by the task's MPS share.
func Threshold(s *Scheduler, t *Task, l *Launch) time.Duration {
	d := l.Est.SK
	if !l.Est.Known {
		d = s.cfg.Epsilon
	}
	return time.Duration(float64(d) * 100 / float64(t.Spec.MPSPercent))
}

func (m *mmk) Schedule(s *Scheduler, now time.Duration) time.Duration {
	wake := Never
	top := -1
	if m.fill {
		top = s.TopActive(now)
		if top >= 0 {
			// FIKIT first: holders and gap filling; record the online
			// kernels it released for the offline waits.
			n := len(s.buf)
			wake = m.fk.Schedule(s, now)
			for i := n; i < len(s.buf); i++ {
				m.countOnline(s, &s.buf[i])
			}
		}
	}
	m.releaseOnline(s, top, now)
	m.releaseOffline(s, top, now)
	return wake
}

// releaseOnline launches every held online kernel (those of priority
// above top were already released by fikit).
func (m *mmk) releaseOnline(s *Scheduler, top int, now time.Duration) {
	for p := range NumPriorities {
		if p == top {
			continue
		}
		m.scratch = m.scratch[:0]
		for _, t := range s.queues[p] {
			if t.Spec.Online {
				m.scratch = append(m.scratch, t)
			}
		}
		for _, t := range m.scratch {
			for t.Pending() > 0 {
				l := &t.pending[t.head]
				if !s.Fits(t, l) {
					m.contended = append(m.contended, contendedKernel{t.ID, l.Seq})
				}
				r := s.Release(t, now)
				m.countOnline(s, &r)
			}
		}
	}
}

// countOnline adds the predicted duration of a released kernel, if it is
// online, to the waits of every offline task whose head is held.
func (m *mmk) countOnline(s *Scheduler, r *Launch) {
	if !s.tasks[r.Task].Spec.Online {
		return
	}
	for p := range NumPriorities {
		for _, t := range s.queues[p] {
			if !t.Spec.Online {
				*m.wait(t) += r.Est.SK
			}
		}
	}
}

// releaseOffline launches offline heads that pass the check or waited
// past their threshold, by priority then arrival.
func (m *mmk) releaseOffline(s *Scheduler, top int, now time.Duration) {
	for p := range NumPriorities {
		if p == top {
			continue
		}
		m.scratch = append(m.scratch[:0], s.queues[p]...)
		slices.SortFunc(m.scratch, func(a, b *Task) int { return cmp.Compare(a.pending[a.head].Seq, b.pending[b.head].Seq) })
		for _, t := range m.scratch {
			if t.Spec.Online {
				continue
			}
			for s.CanRelease(t, s.Preemptible(t)) {
				l := &t.pending[t.head]
				pass := len(m.contended) == 0 && s.Fits(t, l)
				if !pass && *m.wait(t) < Threshold(s, t, l) {
					break
				}
				s.Release(t, now)
			}
		}
	}
}
