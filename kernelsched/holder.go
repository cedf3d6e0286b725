package kernelsched

import "time"

// holder is the state of policies that give the GPU to one task at a time
// (exclusive, hpf, ffs, piv, dprr): the holder's launches are released,
// the others' held. Kernels cannot be interrupted, so a switch takes
// effect at the holder's next kernel boundary: it keeps at most Inflight
// kernels released, and those run to completion.
type holder struct {
	cur   *Task
	since time.Duration
}

// settle drops a holder that was removed or went idle: no held or
// unfinished kernel and past the gap its profile predicts.
func (h *holder) settle(now time.Duration) {
	if h.cur != nil && (h.cur.removed || !h.cur.Active(now)) {
		h.cur = nil
	}
}

func (h *holder) take(t *Task, now time.Duration) {
	if h.cur != t {
		h.cur, h.since = t, now
	}
}

// run releases the holder's launches (within Inflight when limited) and
// returns the timer for the end of its predicted gap, when another task
// may take over.
func (h *holder) run(s *Scheduler, now time.Duration, limited bool) time.Duration {
	if h.cur == nil {
		return Never
	}
	releaseAll(s, h.cur, now, limited)
	return h.cur.wakeAt(now)
}

// pickWaiting returns the task with a held launch that beats all others
// by better (better(a, b): a goes before b), leaving out those skip names;
// nil when none waits.
func pickWaiting(s *Scheduler, skip func(*Task) bool, better func(a, b *Task) bool) *Task {
	var best *Task
	for p := range NumPriorities {
		for _, t := range s.queues[p] {
			if !skip(t) && (best == nil || better(t, best)) {
				best = t
			}
		}
	}
	return best
}

// other is a skip that leaves out the holder.
func (h *holder) other(t *Task) bool { return t == h.cur }

// byPriority prefers the higher priority, then the older launch.
func byPriority(a, b *Task) bool {
	return a.Spec.Priority < b.Spec.Priority || (a.Spec.Priority == b.Spec.Priority && older(a, b))
}

// older reports whether a's head launch arrived before b's.
func older(a, b *Task) bool { return a.pending[a.head].Seq < b.pending[b.head].Seq }

// exclusive lets one task at a time use the GPU, first come first served,
// whatever the priorities. The holder keeps the GPU until it goes idle,
// or, while others wait, for at most Quantum.
type exclusive struct {
	hooks
	h holder
}

func (*exclusive) Name() string { return "exclusive" }

func (e *exclusive) Schedule(s *Scheduler, now time.Duration) time.Duration {
	e.h.settle(now)
	next := pickWaiting(s, e.h.other, older)
	if e.h.cur == nil || (next != nil && now-e.h.since >= s.cfg.Quantum) {
		if next != nil {
			e.h.take(next, now)
		}
	}
	wake := e.h.run(s, now, true)
	if next != nil && e.h.cur != next {
		wake = min(wake, e.h.since+s.cfg.Quantum)
	}
	return wake
}

// hpf is FLEP's highest-priority-first: the GPU goes to the highest
// priority; within a priority, to the shortest remaining time (from the
// profile). A task of higher priority takes the GPU at the next kernel
// boundary; one of equal priority only if the holder's remaining time
// exceeds its own by more than SwitchOverhead.
type hpf struct {
	hooks
	h holder
}

func (*hpf) Name() string { return "hpf" }

func (f *hpf) Schedule(s *Scheduler, now time.Duration) time.Duration {
	f.h.settle(now)
	best := pickWaiting(s, f.h.other, func(a, b *Task) bool {
		if a.Spec.Priority != b.Spec.Priority || a.Remaining() == b.Remaining() {
			return byPriority(a, b)
		}
		return a.Remaining() < b.Remaining()
	})
	if best != nil && HPFSwitch(f.h.cur, best, s.cfg.SwitchOverhead) {
		f.h.take(best, now)
	}
	return f.h.run(s, now, f.h.cur != nil && s.Preemptible(f.h.cur))
}

// HPFSwitch is FLEP's HPF decision: whether the GPU should go from the
// holder cur (nil: none) to the waiting task next.
func HPFSwitch(cur, next *Task, overhead time.Duration) bool {
	switch {
	case cur == nil || next.Spec.Priority < cur.Spec.Priority:
		return true
	case next.Spec.Priority > cur.Spec.Priority:
		return false
	}
	return cur.Remaining() > next.Remaining()+overhead
}

// piv is EffiSha's priority-based immediate eviction: a waiting task of
// higher priority evicts the holder at its next kernel boundary; equal
// priorities are served first come first served.
type piv struct {
	hooks
	h holder
}

func (*piv) Name() string { return "piv" }

func (v *piv) Schedule(s *Scheduler, now time.Duration) time.Duration {
	v.h.settle(now)
	best := pickWaiting(s, v.h.other, byPriority)
	if best != nil && (v.h.cur == nil || best.Spec.Priority < v.h.cur.Spec.Priority) {
		v.h.take(best, now)
	}
	return v.h.run(s, now, v.h.cur != nil && s.Preemptible(v.h.cur))
}
