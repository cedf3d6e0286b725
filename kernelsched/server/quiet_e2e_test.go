package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TestQuietTasksEndToEnd: protocol step 8 with the real hook and the fake
// CUPTI, which calls no callback that is turned off. A task whose launches
// the policy needs not is quiet: its hook turns the launch callbacks off,
// every launch still runs, synchronisations are still reported. It turns
// loud when the policy needs its launches again: another task comes (fikit
// holds it), or the policy is switched live.
func TestQuietTasksEndToEnd(t *testing.T) {
	a := buildC(t)
	const hiN, loN = 400, 200
	cases := []struct {
		name   string
		policy string
		loud   bool
		live   func(context.Context, *Server) error // once both run quiet
		// Gates of each job (MMK_FAKE_GATE, its files named in capitals
		// in the test's directory): "N:quiet" waits after the Nth launch
		// until the hook went quiet, "N:loud" until it turned loud,
		// "N:FILE" until the file exists, "N:>FILE" makes it. GO is made
		// once both tasks were seen quiet and the live change (if any)
		// was made; the low-priority job starts once loStart exists (20
		// ms after the other when ""); the live change waits for the
		// files of liveAfter. What each hook sees is then the same under
		// any load (issue 54: before, a loaded machine let a job launch
		// all its kernels before its hook went quiet, and the test
		// failed 3 times in different subtests).
		hiGate, loGate, loStart string
		liveAfter               []string
		// Launches the hooks saw (reported), within these bounds: a
		// job's first launch is seen or not, as its hook went quiet
		// after it or before.
		hiMin, hiMax, loMin, loMax uint64
		loHeld                     bool // some low-priority launch waited
		quietSeen                  int  // tasks seen quiet at once, at least
	}{
		{name: "fifo: both quiet", policy: "fifo", hiGate: "1:quiet,200:GO", loGate: "1:quiet", hiMax: 1, loMax: 1, quietSeen: 2},
		{name: "fifo, loud: every launch reported", policy: "fifo", loud: true, hiMin: hiN, hiMax: hiN, loMin: loN, loMax: loN},
		{name: "fifo switched to loud: both turn loud", policy: "fifo", live: func(ctx context.Context, s *Server) error {
			return s.SetLoud(ctx, true)
		}, hiGate: "1:quiet,200:>HIAT,200:loud", loGate: "1:quiet,100:>LOAT,100:loud", liveAfter: []string{"HIAT", "LOAT"},
			hiMin: 200, hiMax: 201, loMin: 100, loMax: 101, quietSeen: 2},
		{name: "fikit: alone quiet, loud beside a held task", policy: "fikit", hiGate: "1:quiet,100:>HIAT,100:loud,300:>HI300,300:quiet",
			loGate: "200:HI300", loStart: "HIAT", hiMin: 200, hiMax: 201, loMin: loN, loMax: loN, loHeld: true, quietSeen: 1},
		{name: "fifo switched to fikit: both turn loud", policy: "fifo", live: func(ctx context.Context, s *Server) error {
			return s.SetPolicy(ctx, "fikit", kernelsched.DefaultConfig())
		}, hiGate: "1:quiet,200:>HIAT,200:loud,400:>HIDONE", loGate: "1:quiet,100:>LOAT,100:loud,200:HIDONE", liveAfter: []string{"HIAT", "LOAT"},
			hiMin: 200, hiMax: 201, loMin: 100, loMax: 101, loHeld: true, quietSeen: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A long grace: a hook that never echoes the quiet word makes
			// every task turned loud late, while one on a loaded machine
			// echoes within it.
			s, sock := startServerWith(t, Config{Policy: c.policy, Loud: c.loud, LoudGrace: time.Second})
			ctx := context.Background()
			// The high-priority job runs 80 ms; the low-priority one
			// comes 20 ms in and runs at least 20 ms.
			// Not t.TempDir(): the test's name, with its commas, would
			// be in the gates' paths.
			dir, err := os.MkdirTemp("", "gates")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			file := func(name string) string { return filepath.Join(dir, name) }
			gates := func(g string) string {
				return "MMK_FAKE_GATE=" + regexp.MustCompile(`[A-Z]+`).ReplaceAllStringFunc(g, file)
			}
			waitFile := func(name string) {
				waitFor(t, func() bool { _, err := os.Stat(file(name)); return err == nil })
			}
			hiCmd := replay(ctx, a, writeTrace(t, hiN, 5, 200), 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=hi", gates(c.hiGate))
			loCmd := replay(ctx, a, writeTrace(t, loN, 3, 100), 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5", "MMK_TASK_NAME=lo", gates(c.loGate))
			var hi, lo replayResult
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				hi = runReplay(t, hiCmd)
			}()
			sawBoth := false
			stop := make(chan struct{})
			maxQuiet := make(chan int, 1)
			go func() {
				m := 0
				for {
					select {
					case <-stop:
						maxQuiet <- m
						return
					case <-time.After(time.Millisecond):
						m = max(m, s.Counters().Quiet)
					}
				}
			}()
			if c.loStart != "" {
				waitFile(c.loStart)
			} else {
				time.Sleep(20 * time.Millisecond)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo = runReplay(t, loCmd)
			}()
			if c.quietSeen == 2 {
				waitFor(t, func() bool { return s.Counters().Tasks == 2 && s.Counters().Quiet == 2 })
				sawBoth = true
			}
			if c.live != nil {
				for _, f := range c.liveAfter {
					waitFile(f)
				}
				if err := c.live(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(file("GO"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			close(stop)
			waitFor(t, func() bool { return s.Counters().Tasks == 0 })
			sc := s.Counters()
			t.Logf("hi %+v\nlo %+v\nserver %+v", hi, lo, sc)
			if hi.GateTimeouts != 0 || lo.GateTimeouts != 0 {
				t.Fatalf("gates that timed out: %d and %d (a hook never turned quiet or loud)", hi.GateTimeouts, lo.GateTimeouts)
			}
			if hi.Launches != hiN || lo.Launches != loN {
				t.Fatalf("jobs launched %d and %d kernels, want %d and %d: a quiet hook must let every launch go", hi.Launches, lo.Launches, hiN, loN)
			}
			if hi.Hook.Launches < c.hiMin || hi.Hook.Launches > c.hiMax {
				t.Errorf("high priority: hook saw %d launches, want %d..%d", hi.Hook.Launches, c.hiMin, c.hiMax)
			}
			if lo.Hook.Launches < c.loMin || lo.Hook.Launches > c.loMax {
				t.Errorf("low priority: hook saw %d launches, want %d..%d", lo.Hook.Launches, c.loMin, c.loMax)
			}
			if got := lo.Hook.Held > 0; got != c.loHeld {
				t.Errorf("low priority: %d launches held, want some: %v", lo.Hook.Held, c.loHeld)
			}
			if hi.Hook.Syncs == 0 || lo.Hook.Syncs == 0 {
				t.Errorf("synchronisations seen: %d and %d, want at least the final one each (quiet keeps them)", hi.Hook.Syncs, lo.Hook.Syncs)
			}
			if sc.Kernels != hi.Hook.Launches+lo.Hook.Launches {
				t.Errorf("server took %d kernels, hooks reported %d", sc.Kernels, hi.Hook.Launches+lo.Hook.Launches)
			}
			q := <-maxQuiet
			if sawBoth {
				q = max(q, 2)
			}
			if q < c.quietSeen || (c.loud && q > 0) {
				t.Errorf("at most %d tasks quiet at once, want at least %d (none when loud)", q, c.quietSeen)
			}
			if sc.Quiet != 0 {
				t.Errorf("%d tasks counted quiet after all left", sc.Quiet)
			}
			if sc.LoudLate != 0 {
				t.Errorf("%d tasks turned loud late: the hooks did not echo the quiet word", sc.LoudLate)
			}
		})
	}
}

// TestDeafHoldsBack: a task turned loud whose hook has not echoed the
// quiet word that turned it makes the loop hold back (deaf) for at most
// LoudGrace, then go on, counted late; the echo ends the wait at once. An
// echo of an earlier word (the hook applied the quiet turn before, not
// this loud one) does not.
func TestDeafHoldsBack(t *testing.T) {
	cases := []struct {
		name     string
		ack      uint32        // the word the hook echoed; the loud word is 4
		after    time.Duration // since the task turned loud
		wantDeaf bool
		wantLate uint64
	}{
		{name: "not yet echoed, within grace", ack: 0, after: DefaultLoudGrace / 2, wantDeaf: true},
		{name: "an earlier word echoed", ack: 3, after: DefaultLoudGrace / 2, wantDeaf: true},
		{name: "echoed", ack: 4, after: DefaultLoudGrace / 2},
		{name: "not echoed past grace", ack: 3, after: DefaultLoudGrace, wantLate: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sl, err := newSlot("deaf")
			if err != nil {
				t.Fatal(err)
			}
			defer sl.close()
			*sl.u32(offQuietAck) = c.ack
			const at = time.Second
			s := &Server{cfg: Config{LoudGrace: DefaultLoudGrace, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
				tasks: map[kernelsched.TaskID]*task{1: {slot: sl, loudAt: at, loudWord: 4}}}
			if got := s.deaf(at + c.after); got != c.wantDeaf {
				t.Errorf("deaf = %v, want %v", got, c.wantDeaf)
			}
			if got := s.loudLate.Load(); got != c.wantLate {
				t.Errorf("late %d, want %d", got, c.wantLate)
			}
			if !c.wantDeaf && s.deaf(at+c.after) {
				t.Error("still deaf once the wait ended")
			}
		})
	}
}

// TestQuietWord: each change of a task's quiet flag writes a new word,
// bit 0 the flag, bit 1 request marks while quiet, and a count of
// changes above, so that the hook's echo names the change it applied.
func TestQuietWord(t *testing.T) {
	sl, err := newSlot("word")
	if err != nil {
		t.Fatal(err)
	}
	defer sl.close()
	var got []uint32
	for _, q := range []struct{ quiet, mark bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		got = append(got, sl.setQuiet(q.quiet, q.mark))
	}
	if want := []uint32{5, 8, 15, 16}; !slices.Equal(got, want) {
		t.Errorf("words %v, want %v", got, want)
	}
}
