package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeNamedTrace writes n launches of n kernels with names of 246
// bytes, all different, so that their names fill the hook's socket.
func writeNamedTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%05d_%s 4 1 1 128 1 1 0 0\n", i, strings.Repeat("x", 240))
	}
	p := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readRing reads the slot's ring for a while without granting: a live
// server that holds the task.
func readRing(sl *slot, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for _, ok := sl.next(); ok; _, ok = sl.next() {
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLaunchBoundNeverGranted (issue 38, row 9): against a server that
// never grants, no launch waits longer than the hook's documented bound
// (MMK_HOOK_TIMEOUT_US, 10 ms by default), counted from the launch's
// start, whether the server takes the task's kernel names, takes none
// (its socket fills), or reads nothing at all. Before, a launch that
// named a new kernel waited on the socket's send timeout, which the
// kernel keeps in jiffies (10 ms became 12 to 16), and then for its
// grant: 14 to 16 ms.
func TestLaunchBoundNeverGranted(t *testing.T) {
	a := buildC(t)
	const bound = 10e3 // µs, the hook's default
	// What is measured past the bound is not the hook's waiting (every
	// wait ends at the launch's deadline, a futex or poll with a timeout
	// of nanoseconds) but the kernel waking the launching thread and the
	// fake job's own work around the call: 0.1 to 0.4 ms on the 2-core
	// build machine when idle, and, while other builds ran on it, now and
	// then 3 ms, once 10 ms, for one launch of a run. So the tolerance is
	// 4 ms and a case is run up to three times, failing if every run has
	// a launch past it: what the hook itself adds past the bound is there
	// in every run (before the fix, 10 ms more in each run of "takes no
	// names").
	const tolerance, attempts = 4e3, 3
	trace := writeNamedTrace(t, 200)
	const serveFor = 5 * time.Second
	tests := []struct {
		name  string
		serve func(c *net.UnixConn, sl *slot)
	}{
		{"takes names", func(c *net.UnixConn, sl *slot) {
			go func() { _, _ = io.Copy(io.Discard, c) }()
			readRing(sl, serveFor)
		}},
		{"takes no names", func(c *net.UnixConn, sl *slot) { readRing(sl, serveFor) }},
		{"mute", func(*net.UnixConn, *slot) { time.Sleep(serveFor) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var failures []string
			for range attempts {
				failures = launchBoundRun(t, a, trace, tc.name, tc.serve, bound+tolerance)
				if len(failures) == 0 {
					return
				}
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}

// launchBoundRun runs the fake job once against a server that serves its
// connection as serve does, and says what went past limit (µs).
func launchBoundRun(t *testing.T, a cArtifacts, trace, name string, serve func(*net.UnixConn, *slot), limit float64) []string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	serveOnce(t, sock, func(c *net.UnixConn) { welcomeThen(t, func(sl *slot) { serve(c, sl) })(c) })
	// The machine's own wake-up delay while the job runs: a thread that
	// sleeps 1 ms at a time, and its longest overshoot. On the 2-core
	// build machine under the whole test suite (other packages' race
	// binaries in parallel) launches took 15-17 ms, the hook's count as
	// much: the bound is judged past that delay, which the hook cannot
	// help. What the hook itself added before the fix (the send
	// timeout, 4-10 ms more, in every run) shows while the machine is
	// quieter than that.
	stop := make(chan struct{})
	noise := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		for {
			select {
			case <-stop:
				noise <- worst
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			worst = max(worst, time.Since(t0)-time.Millisecond)
		}
	}()
	r := runReplay(t, replay(context.Background(), a, trace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5"))
	close(stop)
	delay := float64((<-noise).Microseconds())
	limit += delay
	t.Logf("%s: longest launch %.0f µs (the hook's count %.0f µs), %d held, %d failed open; the machine's wake-up delay up to %.0f µs",
		name, r.MaxWaitUs, r.Hook.MaxWaitUs, r.Hook.Held, r.Hook.FailOpen, delay)
	if r.Launches != 200 || r.Hook.Held == 0 {
		t.Fatalf("%d launches, %d held: nothing waited", r.Launches, r.Hook.Held)
	}
	var failures []string
	if r.MaxWaitUs > limit {
		failures = append(failures, fmt.Sprintf("a launch took %.0f µs, more than %.0f µs (the bound, the tolerance and the machine's wake-up delay)", r.MaxWaitUs, limit))
	}
	if r.Hook.MaxWaitUs > limit {
		failures = append(failures, fmt.Sprintf("the hook held a launch %.0f µs, more than %.0f µs (the bound, the tolerance and the machine's wake-up delay)", r.Hook.MaxWaitUs, limit))
	}
	return failures
}

// TestReconnectBacksOff (issue 54, item 9): a server that welcomes the
// hook and never serves it (no grant, the task never freed), then closes
// the connection, is tried again after 1, 2, 4, ... s, not every second:
// each connection costs a launch its bounded wait. Over 7.5 s the hook
// connects at most 4 times (before, about 7).
func TestReconnectBacksOff(t *testing.T) {
	a := buildC(t)
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepts atomic.Int32
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			accepts.Add(1)
			go func() {
				defer c.Close()
				welcomeThen(t, func(*slot) { time.Sleep(100 * time.Millisecond) })(c)
			}()
		}
	}()
	trace := writeTrace(t, 100, 2, 1000)
	cmd := replay(context.Background(), a, trace, 0, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5")
	cmd.Args = append(cmd.Args, "7.5")
	r := runReplay(t, cmd)
	t.Logf("%d connections in 7.5 s; %d launches, %d held, %d failed open", accepts.Load(), r.Launches, r.Hook.Held, r.Hook.FailOpen)
	if n := accepts.Load(); n < 2 || n > 4 {
		t.Errorf("%d connections in 7.5 s, want 2 to 4 (1, 2, 4 s apart)", n)
	}
}
