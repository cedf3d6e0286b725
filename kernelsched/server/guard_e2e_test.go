package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// guardJobs writes the traces of an online job (requests of 10 kernels of
// 50 µs, then a synchronisation and 1.5 ms of think time) and an offline
// one (steps of 4 kernels of 400 µs, one block each), and their
// profiles.
func guardJobs(t *testing.T) (hp, lp string, profiles []*kernelsched.TaskProfile) {
	t.Helper()
	dir := t.TempDir()
	hp, lp = filepath.Join(dir, "hp.txt"), filepath.Join(dir, "lp.txt")
	var b strings.Builder
	for range 10 {
		b.WriteString("h 4 1 1 128 1 1 50 20\n")
	}
	b.WriteString("sync 1500\n")
	if err := os.WriteFile(hp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The offline job waits for its GPU work every 4 kernels, as a
	// training step does (the fake GPU queues without bound otherwise).
	if err := os.WriteFile(lp, []byte(strings.Repeat("l 1 1 1 128 1 1 400 0\n", 4)+"sync 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := func(name string, grid uint32, sk time.Duration) kernelsched.KernelStat {
		return kernelsched.KernelStat{ID: kernelsched.KernelID{Name: name, Grid: kernelsched.Dim3{grid, 1, 1}, Block: kernelsched.Dim3{128, 1, 1}},
			Count: 100, SK: sk, Gaps: 100, SG: 20 * time.Microsecond, SGMax: 2 * time.Millisecond}
	}
	profiles = []*kernelsched.TaskProfile{
		{Key: "hp", Runs: 10, Kernels: []kernelsched.KernelStat{k("h", 4, 50*time.Microsecond)}},
		{Key: "lp", Runs: 10, Kernels: []kernelsched.KernelStat{k("l", 1, 400*time.Microsecond)}},
	}
	return hp, lp, profiles
}

// coRun runs the offline job for lpSeconds and, from 0.3 s in, the online
// one for hpSeconds, both on one fake GPU that runs kernels one at a time
// (no priority: a waiting online kernel waits for the offline one ahead).
func coRun(t *testing.T, a cArtifacts, sock, hp, lp string, hpSeconds, lpSeconds int, lpEnv ...string) (hi, lo replayResult) {
	t.Helper()
	gpu := filepath.Join(t.TempDir(), "gpu")
	run := func(trace string, seconds int, env ...string) *exec.Cmd {
		cmd := exec.CommandContext(context.Background(), a.replay, trace, "0", fmt.Sprint(seconds))
		cmd.Env = append(os.Environ(), "CUDA_INJECTION64_PATH="+a.hook, "MMK_CUPTI_PATH="+a.cupti, "MMK_CUDA_PATH="+a.cupti,
			"MMK_FAKE_GPU="+gpu, "MMK_SCHED_SOCKET="+sock)
		cmd.Env = append(cmd.Env, env...)
		return cmd
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lo = runReplay(t, run(lp, lpSeconds, append([]string{"MMK_PRIORITY=5", "MMK_TASK_KEY=lp", "MMK_TASK_NAME=lp"}, lpEnv...)...))
	}()
	time.Sleep(300 * time.Millisecond)
	hi = runReplay(t, run(hp, hpSeconds, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_KEY=hp", "MMK_TASK_NAME=hp"))
	wg.Wait()
	return hi, lo
}

// TestGuardEndToEnd: on a fake GPU without priority, guard (mmk's default
// policy) measures the online job's requests through its
// synchronisations, probes them alone, finds them slower next to the
// offline job than alone, and holds the offline job's long-block kernels
// during requests: the online job's median latency falls well below what
// it is with every launch going at once (fifo, mmk only observing), while
// the offline job keeps at least its progress floor.
func TestGuardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fake jobs for seconds")
	}
	a := buildC(t)
	hp, lp, profiles := guardJobs(t)
	type result struct {
		hi, lo replayResult
		stats  map[string]float64
	}
	results := map[string]result{}
	for _, policy := range []string{"fifo", "guard"} {
		sched := kernelsched.Config{Guard: kernelsched.GuardConfig{ProbeEvery: 16}}
		s, sock := startServerWith(t, Config{Policy: policy, Sched: sched, Profiles: profiles})
		hi, lo := coRun(t, a, sock, hp, lp, 3, 4)
		waitFor(t, func() bool { return s.Counters().Tasks == 0 })
		results[policy] = result{hi, lo, s.PolicyStats()}
		t.Logf("%s: online p50 %.0f µs p99 %.0f µs over %d requests (syncs %d); offline %d launches, %d held, %d failed open; policy %v",
			policy, hi.IterP50Us, hi.IterP99Us, hi.Iters, hi.Hook.Syncs, lo.Launches, lo.Hook.Held, lo.Hook.FailOpen, results[policy].stats)
	}
	free, g := results["fifo"], results["guard"]
	if g.hi.Iters < 100 || g.hi.Hook.Syncs == 0 {
		t.Fatalf("online job under guard: %d requests, %d synchronisations seen", g.hi.Iters, g.hi.Hook.Syncs)
	}
	if g.stats["probes"] < 3 || g.stats["held_requests"] < 0.5*g.stats["requests"] {
		t.Errorf("guard held the offline job in under half the requests: %v", g.stats)
	}
	if g.hi.IterP50Us > 0.7*free.hi.IterP50Us {
		t.Errorf("online p50 %.0f µs under guard against %.0f µs with every launch going at once: want at most 0.7x", g.hi.IterP50Us, free.hi.IterP50Us)
	}
	if g.hi.Hook.Held != 0 {
		t.Errorf("guard held %d online launches", g.hi.Hook.Held)
	}
	// Progress floor (25 % of the time by default): the offline job's
	// kernels are 400 µs, and it ran 4 s.
	if share := float64(g.lo.Launches) * 400e-6 / 4; share < 0.25*0.8 {
		t.Errorf("offline job got %.2f of the GPU under guard, below its floor", share)
	}
	if g.lo.Hook.Held == 0 {
		t.Errorf("guard held no offline launch")
	}
}

// TestGuardInflightEndToEnd: with guard letting the offline job's kernels
// run during requests (Tau above their block time), the bound on offline
// work in flight holds launches through the real hook and server: a tight
// bound holds the offline job more often than a loose one, and both jobs
// keep running. (What the bound does to the online job's latency is
// timing the fake GPU cannot show steadily under -race; the simulator and
// bench/gpu/pareto.sh measure it.)
func TestGuardInflightEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fake jobs for seconds")
	}
	a := buildC(t)
	hp, lp, profiles := guardJobs(t)
	bounded := map[time.Duration]float64{}
	for _, bound := range []time.Duration{400 * time.Microsecond, 20 * time.Millisecond} {
		sched := kernelsched.Config{Guard: kernelsched.GuardConfig{Tau: time.Millisecond, Inflight: bound}}
		s, sock := startServerWith(t, Config{Policy: "guard", Sched: sched, Profiles: profiles})
		hi, lo := coRun(t, a, sock, hp, lp, 2, 3)
		waitFor(t, func() bool { return s.Counters().Tasks == 0 })
		st := s.PolicyStats()
		t.Logf("in flight at most %v: online p50 %.0f µs over %d requests; offline %d launches, %d held; bound held %v times",
			bound, hi.IterP50Us, hi.Iters, lo.Launches, lo.Hook.Held, st["bounded"])
		if hi.Iters < 50 || lo.Launches == 0 {
			t.Fatalf("bound %v: %d requests, %d offline launches", bound, hi.Iters, lo.Launches)
		}
		bounded[bound] = st["bounded"]
	}
	if tight, loose := bounded[400*time.Microsecond], bounded[20*time.Millisecond]; tight < 1 || tight <= loose {
		t.Errorf("the 400 µs bound held offline launches %v times, the 20 ms bound %v times: want the tight one to hold, and more often", tight, loose)
	}
}

// TestGuardFailOpenEndToEnd: the server goes away while guard holds the
// offline job; both jobs run to the end, no launch waiting past the
// hook's bound for long.
func TestGuardFailOpenEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fake jobs for seconds")
	}
	a := buildC(t)
	hp, lp, profiles := guardJobs(t)
	sock := filepath.Join(t.TempDir(), "sched.sock")
	s, err := New(Config{Socket: sock, Policy: "guard", Sched: kernelsched.Config{Guard: kernelsched.GuardConfig{Tau: -1}}, Profiles: profiles,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil })
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	hi, lo := coRun(t, a, sock, hp, lp, 2, 3)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	t.Logf("online %d requests, offline %d launches (%d held, %d failed open), longest offline wait %.0f µs", hi.Iters, lo.Launches, lo.Hook.Held, lo.Hook.FailOpen, lo.MaxWaitUs)
	if hi.Iters < 50 || lo.Launches < 100 {
		t.Errorf("after the server went: %d online requests, %d offline launches", hi.Iters, lo.Launches)
	}
	if lo.Hook.Held == 0 {
		t.Errorf("guard held no offline launch before the server went")
	}
	if lo.MaxWaitUs > 200e3 {
		t.Errorf("an offline launch waited %.0f µs", lo.MaxWaitUs)
	}
}

// TestObservedCompletionsEndToEnd: the offline job's profile says its
// kernels take 100 µs; on the fake GPU they take 400 µs. While guard
// holds the offline job, its hook records an event after each launch and
// reports when the GPU finished it (protocol step 7), so the server keeps
// each kernel in flight for its real 400 µs: the bound on offline work in
// flight (250 µs of predicted time) holds the offline job more often than
// when completions are predicted (MMK_OBSERVE_EVERY=0), and few kernels
// reach the grace past their prediction.
func TestObservedCompletionsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fake jobs for seconds")
	}
	a := buildC(t)
	hp, lp, profiles := guardJobs(t)
	profiles[1].Kernels[0].SK = 100 * time.Microsecond
	type result struct {
		bounded  float64
		counters Counters
		lo       replayResult
	}
	results := map[string]result{}
	for _, every := range []string{"1", "0"} {
		sched := kernelsched.Config{Guard: kernelsched.GuardConfig{Tau: time.Millisecond, Inflight: 250 * time.Microsecond}}
		s, sock := startServerWith(t, Config{Policy: "guard", Sched: sched, Profiles: profiles})
		hi, lo := coRun(t, a, sock, hp, lp, 2, 3, "MMK_OBSERVE_EVERY="+every)
		waitFor(t, func() bool { return s.Counters().Tasks == 0 })
		r := result{s.PolicyStats()["bounded"], s.Counters(), lo}
		results[every] = r
		t.Logf("MMK_OBSERVE_EVERY=%s: online p50 %.0f µs over %d requests; offline %d launches, %d held, hook observed %d (%d not); server observed %d, past grace %d; bound held %v times",
			every, hi.IterP50Us, hi.Iters, lo.Launches, lo.Hook.Held, lo.Hook.Observed, lo.Hook.Unobserved, r.counters.Observed, r.counters.Unobserved, r.bounded)
		if hi.Iters < 50 || lo.Launches == 0 {
			t.Fatalf("MMK_OBSERVE_EVERY=%s: %d requests, %d offline launches", every, hi.Iters, lo.Launches)
		}
	}
	on, off := results["1"], results["0"]
	if on.lo.Hook.Observed == 0 || on.counters.Observed == 0 {
		t.Fatalf("observing: the hook saw %d completions, the server took %d", on.lo.Hook.Observed, on.counters.Observed)
	}
	if on.counters.Unobserved*10 > on.counters.Observed {
		t.Errorf("observing: %d kernels reached the grace, %d were observed: want under a tenth", on.counters.Unobserved, on.counters.Observed)
	}
	if off.lo.Hook.Observed != 0 || off.counters.Observed != 0 {
		t.Errorf("MMK_OBSERVE_EVERY=0: the hook saw %d completions, the server took %d; want none", off.lo.Hook.Observed, off.counters.Observed)
	}
	if on.bounded <= off.bounded {
		t.Errorf("the in-flight bound held offline launches %v times with observed completions, %v with predicted ones: want more when kernels outlast their profile",
			on.bounded, off.bounded)
	}
}
