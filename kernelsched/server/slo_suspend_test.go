package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// TestSLONewOfflineTaskWhileSuspended drives the server's controller step
// by step (no hooks: tasks and requests told as the loop would): on a
// rung that suspends the offline tasks, a service's requests measure it
// alone while every offline task is stopped; not those told in the step
// where a new offline task came (it ran beside them until the rung was
// applied to it), nor those that arrive within the settle time after it
// was stopped; again those after.
func TestSLONewOfflineTaskWhileSuspended(t *testing.T) {
	l, err := slo.ParseLadder([]string{"suspend"})
	if err != nil {
		t.Fatal(err)
	}
	var stops [][]int
	s, err := New(Config{Policy: "fifo", Socket: filepath.Join(t.TempDir(), "s.sock"), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SLO: &SLOConfig{Controller: slo.Config{Ladder: l, Settle: 100 * time.Millisecond, MinAlone: 1 << 20, WarmUp: -1},
			Targets: map[string]slo.Target{"svc": slo.MustParse("p99=25ms")},
			Suspend: func(pids []int, stop bool, _ SuspendCause) error {
				if stop {
					stops = append(stops, pids)
				}
				return nil
			}}})
	if err != nil {
		t.Fatal(err)
	}
	st := s.slo
	tell := func(tasks []sloTask, from, to time.Duration) {
		st.inMu.Lock()
		st.tasks = append(st.tasks, tasks...)
		for at := from; at < to; at += 10 * time.Millisecond {
			st.samples = append(st.samples, sloSample{id: "1", s: slo.Sample{At: at + 5*time.Millisecond, Latency: 5 * time.Millisecond, Source: slo.Reported}})
		}
		st.inMu.Unlock()
	}
	alone := func() int {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.ctrl.Status(0)[0].AloneN
	}
	ctx := context.Background()
	sec := time.Second
	tell([]sloTask{{id: "1", add: true, online: true, ref: TaskRef{PID: 101, Name: "svc"}}, {id: "2", add: true, ref: TaskRef{PID: 102, Name: "lo"}}}, 0, 0)
	s.sloStep(ctx, sec)
	tell(nil, 2*sec, 3*sec)
	s.sloStep(ctx, 3*sec+10*time.Millisecond)
	before := alone()
	// A second trainer comes while its step's requests run beside it.
	tell([]sloTask{{id: "3", add: true, ref: TaskRef{PID: 103, Name: "lo2"}}}, 3*sec, 4*sec)
	s.sloStep(ctx, 4*sec)
	beside := alone()
	// Stopped at 4 s: those that arrive within the settle time after are
	// not alone, those after are.
	tell(nil, 4*sec, 4*sec+50*time.Millisecond)
	s.sloStep(ctx, 4*sec+100*time.Millisecond)
	settling := alone()
	tell(nil, 4*sec+200*time.Millisecond, 5*sec)
	s.sloStep(ctx, 5*sec+10*time.Millisecond)
	after := alone()
	t.Logf("stops %v; requests alone: %d, %d beside the new task, %d settling, %d after", stops, before, beside, settling, after)
	if len(stops) != 2 || stops[1][0] != 103 {
		t.Fatalf("stops %v, want lo then lo2", stops)
	}
	if before < 90 || beside != before || settling != before || after < before+70 {
		t.Errorf("requests alone: %d, then %d beside the new task (want unchanged), %d settling (unchanged), %d after (want 70 more)", before, beside, settling, after)
	}
}
