package slo

import (
	"fmt"
	"time"
)

// StopBound bounds how long the latency controller keeps an offline task
// stopped (a suspending rung): at most Max at a time, then it runs at
// least as long as the share allows (Max*(1-Share)/Share: 30 s at 50 %),
// and never stopped more than Share of any Window. It is the progress
// floor of a suspension, as guard's is of holding: whatever services
// report, an offline job makes progress (issue 54: a service's fake
// latencies kept another tenant's trainer stopped in 64 of 65 samples).
type StopBound struct {
	Max    time.Duration
	Share  float64
	Window time.Duration
}

// DefaultStopBound is the bound where none is configured: 30 s at a
// time, half of any 10 minutes.
var DefaultStopBound = StopBound{Max: 30 * time.Second, Share: 0.5, Window: 10 * time.Minute}

// Check says what is wrong with a bound ("slo.max_stop" and the others
// name the keys of mmkd's configuration).
func (b StopBound) Check() error {
	switch {
	case b.Max <= 0:
		return fmt.Errorf("the longest stop %v must be positive", b.Max)
	case !(b.Share > 0 && b.Share < 1):
		return fmt.Errorf("the share %v of a window stopped must be above 0 and below 1", b.Share)
	case b.Window < b.Max:
		return fmt.Errorf("the window %v must be at least the longest stop %v", b.Window, b.Max)
	}
	return nil
}

// rest is how long a task runs after a stop of Max before the next.
func (b StopBound) rest() time.Duration {
	return time.Duration(float64(b.Max) * (1 - b.Share) / b.Share)
}

// StopLedger keeps each task's stops (by pid) to hold them to a
// StopBound; time is the caller's (the controller's monotonic clock).
type StopLedger struct {
	bound StopBound
	tasks map[int]*stopRecord
}

// stopRecord is one task's stops: the finished ones within the window,
// the one going on (since >= 0) and until when it must run.
type stopRecord struct {
	past     []stopSpan
	since    time.Duration // start of the stop going on; -1: running
	runUntil time.Duration
}

type stopSpan struct{ from, to time.Duration }

// NewStopLedger is an empty ledger held to b.
func NewStopLedger(b StopBound) *StopLedger {
	return &StopLedger{bound: b, tasks: map[int]*stopRecord{}}
}

func (l *StopLedger) record(pid int) *stopRecord {
	r := l.tasks[pid]
	if r == nil {
		r = &stopRecord{since: -1}
		l.tasks[pid] = r
	}
	return r
}

// stoppedWithin is how long pid was stopped in the window ending at now.
func (l *StopLedger) stoppedWithin(pid int, now time.Duration) time.Duration {
	r := l.tasks[pid]
	if r == nil {
		return 0
	}
	from := now - l.bound.Window
	var d time.Duration
	for _, s := range r.past {
		d += max(0, min(s.to, now)-max(s.from, from))
	}
	if r.since >= 0 {
		d += now - max(r.since, from)
	}
	return d
}

// Allow says whether pid may be (or stay) stopped at now: not past Max
// in one stop, not within its rest after one, and not past the share of
// the window. A stop it ends starts the task's rest.
func (l *StopLedger) Allow(pid int, now time.Duration) bool {
	r := l.record(pid)
	share := time.Duration(l.bound.Share * float64(l.bound.Window))
	if r.since >= 0 {
		if now-r.since < l.bound.Max && l.stoppedWithin(pid, now) < share {
			return true
		}
		l.Resumed(pid, now)
		r.runUntil = now + l.bound.rest()
		return false
	}
	return now >= r.runUntil && l.stoppedWithin(pid, now) < share
}

// Stopped notes that pid was stopped at now.
func (l *StopLedger) Stopped(pid int, now time.Duration) {
	if r := l.record(pid); r.since < 0 {
		r.since = now
	}
}

// Resumed notes that pid runs again at now, and forgets what is past
// the window.
func (l *StopLedger) Resumed(pid int, now time.Duration) {
	r := l.tasks[pid]
	if r == nil || r.since < 0 {
		return
	}
	r.past = append(r.past, stopSpan{r.since, now})
	r.since = -1
	from := now - l.bound.Window
	i := 0
	for i < len(r.past) && r.past[i].to <= from {
		i++
	}
	r.past = r.past[i:]
}

// Forget drops a task that went.
func (l *StopLedger) Forget(pid int) { delete(l.tasks, pid) }
