package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/trace"
)

// cArtifacts are the hook, the fake CUPTI, the replay job and the fake
// CUPTI's stress test, built once by make hook-fakes.
type cArtifacts struct{ hook, cupti, replay, cuptiStress string }

var (
	buildOnce sync.Once
	built     cArtifacts
	buildErr  error
)

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func buildC(t testing.TB) cArtifacts {
	t.Helper()
	buildOnce.Do(func() {
		root := repoRoot(t)
		dir, err := os.MkdirTemp("", "mmk-hook-")
		if err != nil {
			buildErr = err
			return
		}
		built = cArtifacts{filepath.Join(dir, "libmmkhook.so"), filepath.Join(dir, "libfakecupti.so"), filepath.Join(dir, "replay"),
			filepath.Join(dir, "cupti_stress")}
		// The Makefile's flags, one place for both.
		if out, err := exec.Command("make", "-s", "-C", root, "hook-fakes", "FAKE_DIR="+dir).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make hook-fakes: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// writeTrace writes n launches of kernels k0..k{kinds-1} with a gap after each.
func writeTrace(t *testing.T, n, kinds int, gapUs int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d 4 1 1 128 1 1 0 %d\n", i%kinds, gapUs)
	}
	p := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type replayResult struct {
	Hooked    int     `json:"hooked"`
	Launches  int     `json:"launches"`
	WallUs    float64 `json:"wall_us"`
	WaitedUs  float64 `json:"waited_us"`
	MaxWaitUs float64 `json:"max_wait_us"`
	Iters     int     `json:"iters"`
	IterP50Us float64 `json:"iter_p50_us"`
	IterP99Us float64 `json:"iter_p99_us"`
	// Reported iterations (MMK_FAKE_REPORT=1); kernels the fake GPU ran
	// under a TPC mask, and the TPCs the last kept.
	Reported    int    `json:"reported"`
	TPCMasked   uint64 `json:"tpc_masked"`
	TPCLastKeep uint32 `json:"tpc_last_keep"`
	TPCPast     uint64 `json:"tpc_past"`
	// GateTimeouts counts the gates (MMK_FAKE_GATE) that timed out.
	GateTimeouts int `json:"gate_timeouts"`
	Hook         struct {
		Launches uint64 `json:"launches"`
		Held     uint64 `json:"held"`
		FailOpen uint64 `json:"fail_open"`
		Wakes    uint64 `json:"wakes"`
		Syncs    uint64 `json:"syncs"`
		// Observed completions (protocol step 7), and launches to
		// observe that got no event.
		Observed   uint64 `json:"observed"`
		Unobserved uint64 `json:"unobserved"`
		// MaxWaitUs is the longest a launch waited in the hook's client,
		// from its start, by the hook's own count.
		MaxWaitUs float64 `json:"max_wait_us"`
	} `json:"hook"`
}

// replay runs the fake job with the hook and the given extra environment.
func replay(ctx context.Context, a cArtifacts, trace string, loops int, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, a.replay, trace, fmt.Sprint(loops))
	cmd.Env = append(os.Environ(), "CUDA_INJECTION64_PATH="+a.hook, "MMK_CUPTI_PATH="+a.cupti)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func runReplay(t *testing.T, cmd *exec.Cmd) replayResult {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	var r replayResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("replay output %q: %v", out, err)
	}
	return r
}

func startServer(t *testing.T, policy string) (*Server, string) {
	t.Helper()
	return startServerWith(t, Config{Policy: policy})
}

// startServerWith serves cfg on a fresh socket until the test ends.
func startServerWith(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "sched.sock")
	cfg.Socket, cfg.Log = sock, slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	for range 200 {
		if _, err := os.Stat(sock); err == nil {
			return s, sock
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("server socket never appeared")
	return nil, ""
}

// TestEndToEnd: a high- and a low-priority job share a real server under
// fikit, loud (every hook reports every launch, even the high-priority
// job's while it is alone). Every launch reaches it, the high-priority one
// never waits (its launches go at once), and the low-priority one is held.
func TestEndToEnd(t *testing.T) {
	a := buildC(t)
	s, sock := startServerWith(t, Config{Policy: "fikit", Loud: true})
	hiTrace := writeTrace(t, 400, 5, 200)
	loTrace := writeTrace(t, 200, 3, 0)
	ctx := context.Background()
	hiCmd := replay(ctx, a, hiTrace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=hi")
	var hi replayResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hi = runReplay(t, hiCmd)
	}()
	time.Sleep(20 * time.Millisecond) // the high-priority job is registered first
	lo := runReplay(t, replay(ctx, a, loTrace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5", "MMK_TASK_NAME=lo"))
	wg.Wait()
	// The server counts what a task published before it went once it
	// sees the task's socket close.
	waitFor(t, func() bool { return s.Counters().Tasks == 0 })
	c := s.Counters()
	t.Logf("hi %+v\nlo %+v\nserver %+v", hi, lo, c)
	if hi.Hooked != 1 || lo.Hooked != 1 || hi.Hook.Launches != 400 || lo.Hook.Launches != 200 {
		t.Fatalf("hook saw %d and %d launches, want 400 and 200", hi.Hook.Launches, lo.Hook.Launches)
	}
	if hi.Hook.Held != 0 || hi.Hook.FailOpen != 0 {
		t.Errorf("high priority: %d launches held, %d failed open; want none", hi.Hook.Held, hi.Hook.FailOpen)
	}
	if lo.Hook.Held == 0 {
		t.Errorf("low priority: no launch was held")
	}
	if hi.Hook.Syncs == 0 || lo.Hook.Syncs == 0 {
		t.Errorf("synchronisations seen: %d and %d, want at least the final one each", hi.Hook.Syncs, lo.Hook.Syncs)
	}
	if c.Kernels != 600 {
		t.Errorf("server saw %d kernels, want 600", c.Kernels)
	}
	if c.AtOnce < 400 {
		t.Errorf("server counted %d launches at once, want at least the high priority's 400", c.AtOnce)
	}
}

// TestBurstWakesPollingServer: a lone task's launches go at once, so the
// server polls, here every 300 ms (loud: the lone task reports them); a burst of three rings without a pause
// must wake it (the hook writes its eventfd at half a ring) rather than
// wait for the next read. The hook's bound is long (1 s) so that a server
// slowed down by the race detector never makes the burst fail open.
func TestBurstWakesPollingServer(t *testing.T) {
	a := buildC(t)
	s, sock := startServerWith(t, Config{Policy: "fikit", Poll: 300 * time.Millisecond, Loud: true})
	n := 3 * Ring
	r := runReplay(t, replay(context.Background(), a, writeTrace(t, n, 7, 0), 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=0", "MMK_TASK_NAME=burst",
		"MMK_HOOK_TIMEOUT_US=1000000"))
	waitFor(t, func() bool { return s.Counters().Kernels == uint64(n) })
	if r.Hook.FailOpen != 0 || r.Hook.Held != 0 {
		t.Errorf("burst of %d: %d fail-opens, %d held; want none", n, r.Hook.FailOpen, r.Hook.Held)
	}
	// Three rings past a server that reads every 300 ms: at least one
	// backlog per ring beyond the first.
	if r.Hook.Wakes < 2 {
		t.Errorf("burst of %d: the hook woke the server %d times, want at least 2", n, r.Hook.Wakes)
	}
	t.Logf("%+v, server %+v", r, s.Counters())
}

// TestLoneTaskPolls: while every task's launches go at once, the loop reads
// the rings once per poll interval, however many launches come and
// whatever completions the core predicts: it costs the job's machine a few
// system calls, not one per launch (loud: the lone task reports them).
func TestLoneTaskPolls(t *testing.T) {
	a := buildC(t)
	const n, gapUs, poll = 2000, 50, 5 * time.Millisecond
	s, sock := startServerWith(t, Config{Policy: "fikit", Poll: poll, Loud: true})
	r := runReplay(t, replay(context.Background(), a, writeTrace(t, n, 7, gapUs), 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=0", "MMK_TASK_NAME=lone"))
	waitFor(t, func() bool { return s.Counters().Tasks == 0 })
	c := s.Counters()
	// At most one wait per poll interval of the job's run, with room for
	// the waits around its start and end; one per launch would be n.
	limit := uint64(time.Duration(r.WallUs)*time.Microsecond/poll) + 20
	if c.Kernels != n || c.Waits > limit {
		t.Errorf("%d kernels in %.0f µs: the loop waited %d times, want %d kernels and at most %d waits", c.Kernels, r.WallUs, c.Waits, n, limit)
	}
	t.Logf("%+v, server %+v", r, c)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5 s")
}

// serveOnce listens on sock and serves its first connection with serve
// (closed after it), the listener closed when the test ends: a fake
// kernel scheduler for one hook.
func serveOnce(t *testing.T, sock string, serve func(*net.UnixConn)) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
}

// TestFailOpen: a server that accepts the hook and then never grants, or
// is absent, or speaks another protocol version, never stops the job.
// welcomeThen is a server side that reads the hook's hello, welcomes it
// with a fresh slot and then does what then does with the slot.
func welcomeThen(t *testing.T, then func(*slot)) func(*net.UnixConn) {
	return func(c *net.UnixConn) {
		sl, err := newSlot("test")
		if err != nil {
			t.Error(err)
			return
		}
		defer sl.close()
		buf := make([]byte, helloSize)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Error(err)
			return
		}
		efd := mustEventfd(t)
		_, _, _ = c.WriteMsgUnix(welcome(0), rights(sl.fd, efd), nil)
		then(sl)
	}
}

func TestFailOpen(t *testing.T) {
	a := buildC(t)
	trace := writeTrace(t, 50, 2, 0)
	tests := []struct {
		name  string
		serve func(c *net.UnixConn) // nil: no server at all
		// wantFailOpen is the fail-opens expected; with atLeast, the
		// fewest, and every launch held goes by failing open.
		wantFailOpen uint64
		atLeast      bool
	}{
		{"absent", nil, 0, false},
		{"mute", welcomeThen(t, func(*slot) {
			time.Sleep(2 * time.Second) // never grants
		}), 1, false},
		{"reads but never grants", welcomeThen(t, func(sl *slot) {
			// A live server that holds the task: after a wait of its
			// bound (here 2 ms) fails open, the hook holds the next
			// launches again once the server has read the ring: on an
			// idle machine all 50 wait their bound. On a loaded one the
			// server's reads lag and launches meanwhile go unasked (a hung
			// server costs one bounded wait, not one per launch): 9 of 50
			// waited in a run with -race beside two busy loops on two
			// cores, so the test asks only that the hook held again after
			// a fail-open.
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				for _, ok := sl.next(); ok; _, ok = sl.next() {
				}
				time.Sleep(100 * time.Microsecond)
			}
		}), 2, true},
		{"other version", func(c *net.UnixConn) {
			buf := make([]byte, helloSize)
			_, _ = io.ReadFull(c, buf)
			w := welcome(0)
			w[4] = 99
			_, _ = c.Write(w)
		}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			if tc.serve != nil {
				serveOnce(t, sock, tc.serve)
			}
			start := time.Now()
			r := runReplay(t, replay(context.Background(), a, trace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5", "MMK_HOOK_TIMEOUT_US=2000"))
			if r.Hook.Launches != 50 || r.Launches != 50 {
				t.Errorf("%d launches seen of 50", r.Hook.Launches)
			}
			if r.Hook.FailOpen != tc.wantFailOpen && !(tc.atLeast && r.Hook.FailOpen > tc.wantFailOpen) {
				t.Errorf("fail-opens %d, want %d (at least: %v)", r.Hook.FailOpen, tc.wantFailOpen, tc.atLeast)
			}
			if tc.atLeast && r.Hook.Held != r.Hook.FailOpen {
				t.Errorf("%d launches held and %d failed open, want every one held to fail open (nothing is granted)", r.Hook.Held, r.Hook.FailOpen)
			}
			// No wait much beyond the bound.
			if r.MaxWaitUs > 1e6 {
				t.Errorf("a launch waited %.0f us", r.MaxWaitUs)
			}
			t.Logf("%s: %+v in %s", tc.name, r, time.Since(start))
		})
	}
}

// TestProfilingPhase: the hook records kernels through the (fake) CUPTI
// activity API for the asked number of runs after the warm-up, in the
// kernel trace format, and the trace package makes the profile of it.
func TestProfilingPhase(t *testing.T) {
	a := buildC(t)
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "k%d 8 1 1 256 1 1 200 300\n", i)
	}
	b.WriteString("sync 50000\n")
	src := filepath.Join(t.TempDir(), "iter.txt")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "profile.trace.jsonl")
	r := runReplay(t, replay(context.Background(), a, src, 9, "MMK_PROFILE_OUT="+out, "MMK_PROFILE_SKIP=2", "MMK_PROFILE_RUNS=4",
		"MMK_PROFILE_MIN_S=0", "MMK_PROFILE_RUN_GAP_US=20000"))
	if r.Launches != 45 {
		t.Fatalf("%d launches, want 45", r.Launches)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no profile trace: %v", err)
	}
	defer f.Close()
	kt, err := trace.ReadKernelTrace("hook", f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kt.HookProfile("job")
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs != 4 || p.RunKernels != 5 || len(p.Kernels) != 5 {
		t.Fatalf("profile of %d runs, %.1f kernels per run, %d ids; want 4, 5, 5", p.Runs, p.RunKernels, len(p.Kernels))
	}
	for _, k := range p.Kernels {
		if k.SK != 200*time.Microsecond || k.Count != 4 {
			t.Errorf("%s: SK %v over %d runs, want 200µs over 4", k.ID.Name, k.SK, k.Count)
		}
		if k.ID.Grid != (kernelsched.Dim3{8, 1, 1}) || k.ID.Block != (kernelsched.Dim3{256, 1, 1}) {
			t.Errorf("%s: grid %v block %v", k.ID.Name, k.ID.Grid, k.ID.Block)
		}
		last := k.ID.Name == "k4"
		if last != (k.Gaps == 0) {
			t.Errorf("%s: %d gaps; only the run's last kernel has none", k.ID.Name, k.Gaps)
		}
		if !last && (k.SG < 90*time.Microsecond || k.SG > 20*time.Millisecond || k.NextLaunchMax < 300*time.Microsecond) {
			t.Errorf("%s: gap %v, next launch within %v; want about 100µs and at least 300µs", k.ID.Name, k.SG, k.NextLaunchMax)
		}
	}
}
