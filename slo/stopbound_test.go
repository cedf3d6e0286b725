package slo

import (
	"testing"
	"time"
)

// TestStopBound: a task the controller wants stopped all the time (a
// service that always reports late) is stopped at most Max at a time,
// then runs its rest, and is never stopped more than Share of any
// window; one it wants stopped for short spells is stopped each time.
// Before (issue 54), suspend had no progress floor.
func TestStopBound(t *testing.T) {
	const step = 100 * time.Millisecond
	for _, tc := range []struct {
		name       string
		bound      StopBound
		want       func(now time.Duration) bool // the rung suspends at now
		maxStopped time.Duration                // the most stopped in one stop
		minShare   float64                      // of the whole run, stopped at least
	}{
		{"always, default", DefaultStopBound, func(time.Duration) bool { return true }, 30 * time.Second, 0.45},
		{"always, 5 s at 20 %", StopBound{Max: 5 * time.Second, Share: 0.2, Window: time.Minute}, func(time.Duration) bool { return true }, 5 * time.Second, 0.15},
		{"short spells", DefaultStopBound, func(now time.Duration) bool { return now%(20*time.Second) < 2*time.Second }, 2 * time.Second, 0.09},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.bound.Check(); err != nil {
				t.Fatal(err)
			}
			l := NewStopLedger(tc.bound)
			const pid = 42
			stopped := false
			var since, longest, total time.Duration
			var at []bool // stopped or not, per step
			end := 30 * time.Minute
			for now := time.Duration(0); now < end; now += step {
				stop := tc.want(now) && l.Allow(pid, now)
				switch {
				case stop && !stopped:
					l.Stopped(pid, now)
					since = now
				case !stop && stopped:
					l.Resumed(pid, now)
					longest = max(longest, now-since)
				}
				stopped = stop
				at = append(at, stop)
				if stop {
					total += step
				}
			}
			if longest > tc.maxStopped {
				t.Errorf("a stop of %v, want at most %v", longest, tc.maxStopped)
			}
			perWindow := int(tc.bound.Window / step)
			n := 0
			for i, s := range at {
				if s {
					n++
				}
				if i >= perWindow && at[i-perWindow] {
					n--
				}
				if n > int(tc.bound.Share*float64(perWindow))+1 {
					t.Fatalf("stopped %d of %d steps in the window ending at step %d, want at most %.0f %%", n, perWindow, i, 100*tc.bound.Share)
				}
			}
			if share := float64(total) / float64(end); share < tc.minShare {
				t.Errorf("stopped %.2f of the run, want at least %.2f: the bound stops too little", share, tc.minShare)
			}
		})
	}
}

// TestStopBoundCheck: a bound that would not bound is refused.
func TestStopBoundCheck(t *testing.T) {
	for _, b := range []StopBound{
		{Max: 0, Share: 0.5, Window: time.Minute},
		{Max: time.Second, Share: 0, Window: time.Minute},
		{Max: time.Second, Share: 1, Window: time.Minute},
		{Max: time.Minute, Share: 0.5, Window: time.Second},
	} {
		if b.Check() == nil {
			t.Errorf("%+v taken", b)
		}
	}
}
