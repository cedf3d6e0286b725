package kernelsched

import "time"

// fikit is FIKIT's Algorithm 1 with BestPrioFit (Algorithm 2), as the
// issue states them (the paper's text was not at hand):
//
//   - The highest priority with an active task holds the GPU; its
//     launches go at once, interleaved FIFO among equal priorities. A task
//     stays active between two kernels of a run for the gap its profile
//     predicts, so a lower priority cannot take the GPU in that gap.
//   - When a holder's kernel is released, the gap after it is predicted:
//     it opens when the kernel's predicted end is reached and lasts SG.
//     Gaps shorter than Epsilon are not filled.
//   - The gap is filled by BestPrioFit: from the highest waiting priority
//     below the holder's down, the longest kernel whose SK fits the time
//     left in the gap after the work already released. Kernels without a
//     profile never fill a gap.
//   - Real-time feedback: the holder's next launch closes the gap at once;
//     what was released runs on, nothing more is released into it.
//   - A lower priority that holds the GPU (the higher ones idle) keeps at
//     most Inflight kernels released, so a higher priority that arrives
//     takes the GPU at the next kernel boundary.
type fikit struct {
	hooks
	scratch []*Task
}

func (*fikit) Name() string { return "fikit" }

func (f *fikit) Schedule(s *Scheduler, now time.Duration) time.Duration {
	top := s.TopActive(now)
	if top < 0 {
		return Never
	}
	f.scratch = append(f.scratch[:0], s.queues[top]...)
	releaseOldestFirst(s, f.scratch, now, s.Preemptible)
	wake, window := f.gap(s, top, now)
	fillGap(s, top, window, now)
	return wake
}

// gap returns when the holders' predicted gap ends (the next timer: a
// lower priority may take the GPU then) and the end of the window that may
// be filled (closed if any holder has a launch waiting).
func (f *fikit) gap(s *Scheduler, top int, now time.Duration) (wake, window time.Duration) {
	wake, window = Never, Never
	for _, t := range s.tasks {
		if t.removed || t.Spec.Priority != top || !t.Active(now) {
			continue
		}
		window = min(window, t.windowEnd)
		wake = min(wake, t.wakeAt(now))
	}
	return wake, window
}

// fillGap releases lower-priority kernels into the window by BestPrioFit.
func fillGap(s *Scheduler, top int, window, now time.Duration) {
	if window == Never {
		return
	}
	for {
		remaining := window - max(now, s.predEnd)
		if remaining < s.cfg.Epsilon {
			return
		}
		t := BestPrioFit(s, top+1, remaining)
		if t == nil {
			return
		}
		s.Release(t, now)
	}
}

// BestPrioFit is FIKIT's Algorithm 2: scanning priorities from `from`
// down to 9, the first priority with a held launch whose predicted
// duration fits `remaining` supplies the longest such launch (ties: the
// one that arrived first). It returns the task whose head launch that is,
// or nil when nothing fits.
func BestPrioFit(s *Scheduler, from int, remaining time.Duration) *Task {
	for p := max(from, 0); p < NumPriorities; p++ {
		var best *Task
		for _, t := range s.queues[p] {
			l := &t.pending[t.head]
			if !l.Est.Known || l.Est.SK > remaining {
				continue
			}
			if best == nil {
				best = t
				continue
			}
			b := &best.pending[best.head]
			if l.Est.SK > b.Est.SK || (l.Est.SK == b.Est.SK && l.Seq < b.Seq) {
				best = t
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}
