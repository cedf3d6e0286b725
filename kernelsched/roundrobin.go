package kernelsched

import "time"

// ffs is FLEP's weighted fair scheduling: tasks take turns at the GPU in
// task order, each for an epoch of T x W_i, W_i its weight. T is the
// smallest epoch unit that keeps switching under MaxSwitchOverhead of the
// time: T = SwitchOverhead / (MaxSwitchOverhead x the smallest weight).
// A turn ends early when the holder goes idle.
type ffs struct {
	hooks
	h holder
	// last is the task whose turn was last: the next turn goes to the
	// first waiting task after it, even when it went idle meanwhile.
	last TaskID
}

func (*ffs) Name() string { return "ffs" }

// FFSUnit is ffs's T for the registered tasks.
func FFSUnit(s *Scheduler) time.Duration {
	wmin := 0
	for _, t := range s.tasks {
		if !t.removed && (wmin == 0 || t.weight < wmin) {
			wmin = t.weight
		}
	}
	if wmin == 0 {
		return 0
	}
	return time.Duration(float64(s.cfg.SwitchOverhead) / (s.cfg.MaxSwitchOverhead * float64(wmin)))
}

// epoch is the turn length of t.
func epoch(s *Scheduler, t *Task) time.Duration { return FFSUnit(s) * time.Duration(t.weight) }

func (f *ffs) Schedule(s *Scheduler, now time.Duration) time.Duration {
	f.h.settle(now)
	if f.h.cur == nil || now-f.h.since >= epoch(s, f.h.cur) {
		if next := f.next(s); next != nil {
			f.h.take(next, now)
			f.last = next.ID
		} else if f.h.cur != nil {
			f.h.since = now // nobody else waits: a new turn
		}
	}
	wake := f.h.run(s, now, true)
	if f.h.cur != nil {
		wake = min(wake, f.h.since+epoch(s, f.h.cur))
	}
	return wake
}

// next is the first waiting task after the last turn's, in task order.
func (f *ffs) next(s *Scheduler) *Task {
	n := len(s.tasks)
	for i := 1; i <= n; i++ {
		t := s.tasks[(int(f.last)+i)%n]
		if t != f.h.cur && !t.removed && t.Pending() > 0 {
			return t
		}
	}
	return nil
}

// dprr is EffiSha's dynamic-priority round robin. A task's static level
// is 9 - Priority (higher is more important); while it waits it gains one
// level per AgeStep, at most AgeCap. The waiting task of highest dynamic
// level in the active queue gets the GPU for a quota of (p+1)/2 ms, p its
// dynamic level then; a task that used its quota moves to the inactive
// queue and its ageing restarts. When no task of the active queue waits,
// the queues swap. A turn ends early when the holder goes idle.
type dprr struct {
	hooks
	h        holder
	quota    time.Duration
	inactive []bool
	since    []time.Duration // when each task started waiting
}

func (*dprr) Name() string { return "dprr" }

func (d *dprr) TaskAdded(_ *Scheduler, t *Task) {
	d.inactive = atID(d.inactive, t.ID, false)
	d.since = atID(d.since, t.ID, 0)
}

// Arrived starts the ageing of a task that had nothing held.
func (d *dprr) Arrived(_ *Scheduler, t *Task, _ *Launch, now time.Duration) {
	if t.Pending() == 1 && d.h.cur != t {
		d.since[t.ID] = now
	}
}

// DPRRLevel is task t's dynamic level at now under dprr's ageing.
func DPRRLevel(s *Scheduler, t *Task, waitingSince, now time.Duration) int {
	level := NumPriorities - 1 - t.Spec.Priority
	if s.cfg.AgeStep > 0 && now > waitingSince {
		level += min(s.cfg.AgeCap, int((now-waitingSince)/s.cfg.AgeStep))
	}
	return level
}

// DPRRQuota is the GPU time a task of dynamic level p gets per turn.
func DPRRQuota(level int) time.Duration {
	return time.Duration(level+1) * time.Millisecond / 2
}

func (d *dprr) Schedule(s *Scheduler, now time.Duration) time.Duration {
	d.h.settle(now)
	if d.h.cur != nil && now-d.h.since >= d.quota {
		d.inactive[d.h.cur.ID] = true
		d.since[d.h.cur.ID] = now
		d.h.cur = nil
	}
	if d.h.cur == nil {
		next := d.pick(s, now)
		if next != nil {
			d.quota = DPRRQuota(DPRRLevel(s, next, d.since[next.ID], now))
			d.h.take(next, now)
		}
	}
	wake := d.h.run(s, now, true)
	if d.h.cur != nil {
		wake = min(wake, d.h.since+d.quota)
	}
	return wake
}

// pick returns the waiting task of the active queue with the highest
// dynamic level (ties: the oldest launch). When the active queue has none
// it swaps the queues and looks again.
func (d *dprr) pick(s *Scheduler, now time.Duration) *Task {
	skip := func(t *Task) bool { return t == d.h.cur || d.inactive[t.ID] }
	higher := func(a, b *Task) bool {
		la, lb := DPRRLevel(s, a, d.since[a.ID], now), DPRRLevel(s, b, d.since[b.ID], now)
		return la > lb || (la == lb && older(a, b))
	}
	for range 2 {
		if best := pickWaiting(s, skip, higher); best != nil {
			return best
		}
		any := false
		for i := range d.inactive {
			any = any || d.inactive[i]
			d.inactive[i] = false
		}
		if !any {
			return nil
		}
	}
	return nil
}
