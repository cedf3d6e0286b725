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
	fill      bool
	fk        fikit
	waited    []time.Duration // per task: online work launched while its head waited
	contended []uint64        // online kernels released that failed the check
	scratch   []*Task
}

func newMMK(fill bool) *mmk { return &mmk{fill: fill} }

func (m *mmk) Name() string {
	if m.fill {
		return "fikit+mmk"
	}
	return "mmk"
}

func (m *mmk) TaskAdded(_ *Scheduler, t *Task) {
	m.waited = append(m.waited, 0)
}

// Arrived starts the wait of a task's new head launch.
func (m *mmk) Arrived(_ *Scheduler, t *Task, _ *Launch, _ time.Duration) {
	if t.Pending() == 1 {
		m.waited[t.ID] = 0
	}
}

func (m *mmk) Completed(_ *Scheduler, _ *Task, seq uint64, _ time.Duration) {
	if i := slices.Index(m.contended, seq); i >= 0 {
		m.contended = slices.Delete(m.contended, i, i+1)
	}
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
			m.countOnline(s, s.buf[n:])
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
					m.contended = append(m.contended, l.Seq)
				}
				r := s.Release(t, now)
				m.countOnline(s, []Launch{r})
			}
		}
	}
}

// countOnline adds the predicted durations of released online kernels to
// the waits of every offline task whose head is held.
func (m *mmk) countOnline(s *Scheduler, rel []Launch) {
	for _, r := range rel {
		if !s.tasks[r.Task].Spec.Online {
			continue
		}
		for p := range NumPriorities {
			for _, t := range s.queues[p] {
				if !t.Spec.Online {
					m.waited[t.ID] += r.Est.SK
				}
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
				if !pass && m.waited[t.ID] < Threshold(s, t, l) {
					break
				}
				m.waited[t.ID] = 0
				s.Release(t, now)
			}
		}
	}
}
