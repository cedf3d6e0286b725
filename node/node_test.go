package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

// TestMain lets the test binary be the job supervisor.
func TestMain(m *testing.M) {
	if os.Getenv("MMK_NODE_TEST_SHIM") == "1" {
		os.Exit(jobs.ShimMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// curveEstimator is a deterministic Estimator for tests: a job's speed is
// the instance's share of the GPU's SMs times min(1, percent/demand),
// with the demand by job type (100 for types it does not list), and no
// contention.
type curveEstimator map[string]int

func (c curveEstimator) Speed(j partitioner.Job, sms, gpuSMs, percent int, _ []partitioner.Share) (float64, error) {
	d, ok := c[j.Type]
	if !ok {
		d = 100
	}
	return float64(sms) / float64(gpuSMs) * min(1, float64(percent)/float64(d)), nil
}

// harness is a node on fake GPUs with a real store and runner.
type harness struct {
	t       *testing.T
	n       *Node
	backend partitioner.Backend
	cancel  context.CancelFunc
	done    chan error
}

func newHarness(t *testing.T, gpus []fakegpu.GPUSpec, manageMIG bool, est partitioner.Estimator) *harness {
	t.Helper()
	return newHarnessWith(t, gpus, manageMIG, est, nil)
}

// newHarnessWith starts a node; opts change its configuration first.
func newHarnessWith(t *testing.T, gpus []fakegpu.GPUSpec, manageMIG bool, est partitioner.Estimator, sc *SchedConfig, opts ...func(*Config)) *harness {
	t.Helper()
	backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	dir := t.TempDir()
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(testWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	runner := testRunner(t, dir, log)
	// The tests run as root; their jobs are root's.
	cfg := Config{Backend: backend, Store: store, Runner: runner, Estimator: est, ManageMIG: manageMIG, Sched: sc, AllowRoot: true,
		StopGrace: 5 * time.Second, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}, Log: log}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, n: n, backend: backend, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- n.Run(ctx) }()
	t.Cleanup(func() {
		// Jobs outlive the node: the queued ones are cancelled first, so
		// that none starts as the running ones stop and free the GPU
		// (one that did wrote its exit record into a directory being
		// removed: TestWaitReasons failed so once), then what still
		// runs is stopped, then the loop.
		for _, j := range h.list() {
			if j.State == jobs.Pending {
				_, _ = n.Cancel(j.ID, "test over") // a job that moved on meanwhile is met below
			}
		}
		var stopped []string
		for _, j := range h.list() {
			if !j.State.Terminal() {
				if _, err := n.Cancel(j.ID, "test over"); err == nil {
					stopped = append(stopped, j.ID)
				}
			}
		}
		// Their supervisors write the exit records before the temporary
		// directories go (a job that never started has none).
		for _, id := range stopped {
			h.until(id, "ended", func(j jobs.Job) bool { return j.State.Terminal() && (j.ExitCode != nil || j.PID == 0) })
		}
		cancel()
		if err := <-h.done; err != nil {
			t.Error(err)
		}
	})
	for !n.ready.Load() {
		time.Sleep(time.Millisecond)
	}
	return h
}

func (h *harness) list() []jobs.Job {
	js, err := h.n.Jobs(JobFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	return js
}

func (h *harness) submit(spec jobs.Spec) jobs.Job {
	h.t.Helper()
	j, created, err := h.n.Submit(context.Background(), spec, "", nil)
	if err != nil || !created {
		h.t.Fatalf("submit: %v %v", created, err)
	}
	return j
}

// until waits for the job to satisfy ok.
func (h *harness) until(id string, what string, ok func(jobs.Job) bool) jobs.Job {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := h.n.Job(id)
		if err != nil {
			h.t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s (%s): %s (%s), want %s", id, j.Spec.Name, j.State, j.Reason, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) state(id string, s jobs.State) jobs.Job {
	h.t.Helper()
	return h.until(id, string(s), func(j jobs.Job) bool { return j.State == s })
}

func sh(name, script string, typ string) jobs.Spec {
	s := jobs.Spec{Name: name, Command: []string{"sh", "-c", script}, Kind: jobs.Offline}
	if typ != "" {
		s.Workload = &jobs.Workload{Model: typ, Mode: "train"}
	}
	return s
}

// gated is a script that waits for a file, then exits with code.
func gated(t *testing.T, code string) (script, gate string) {
	gate = filepath.Join(t.TempDir(), "go")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	return "while [ ! -e " + gate + " ]; do sleep 0.01; done; exit " + code, gate
}

func open(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

var h200 = []fakegpu.GPUSpec{{Model: "H200-141GB"}}

// TestPlaceAndEnvironment: a job is placed on a MIG instance, started
// with the instance's device, and its exit status recorded. The node runs
// no MPS: the job gets no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and its
// placement no MPS share, only the share it was planned with (issue 37,
// item 5: it got 100, shown and exported though nothing enforced it).
func TestPlaceAndEnvironment(t *testing.T) {
	h := newHarness(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}, false, curveEstimator{})
	out := filepath.Join(t.TempDir(), "env")
	j := h.submit(sh("env", "env > "+out+"; exit 3", ""))
	j = h.state(j.ID, jobs.Failed)
	if j.ExitCode == nil || *j.ExitCode != 3 || j.Reason != "exit status 3" {
		t.Errorf("exit %v reason %q", j.ExitCode, j.Reason)
	}
	pl := j.Placement
	if pl == nil || pl.Profile != "4g.40gb" || pl.Share != 100 || pl.MPSPercent != 0 || !strings.HasPrefix(pl.Device, "MIG-") || pl.InstanceName != "gpu0/gi1" {
		t.Fatalf("placement %+v: want the 4g.40gb (most SMs), gpu0/gi1, planned at 100 %% without an MPS share, on its MIG device", pl)
	}
	env, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CUDA_VISIBLE_DEVICES=" + pl.Device,
		"MMK_JOB_ID=" + j.ID, "MMK_RESTART_COUNT=0", "MMK_CHECKPOINT_DIR="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("job environment lacks %s", want)
		}
	}
	if strings.Contains(string(env), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") {
		t.Errorf("a job of a node without MPS has an MPS share in its environment:\n%s", grepEnv(string(env), "CUDA_MPS"))
	}
	evs, err := h.n.Events(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var path []jobs.State
	for _, e := range evs {
		path = append(path, e.To)
	}
	if !slices.Equal(path, []jobs.State{jobs.Pending, jobs.Placed, jobs.Running, jobs.Failed}) {
		t.Errorf("events %v", path)
	}
}

// TestShareAndQueue: jobs of demand 50 % share the one instance two at a
// time; a third waits and is placed when one ends; memory beyond every
// instance is refused at submission.
func TestShareAndQueue(t *testing.T) {
	h := newHarness(t, h200, false, curveEstimator{"half_train": 50})
	script, gate := gated(t, "0")
	a := h.submit(sh("a", script, "half"))
	b := h.submit(sh("b", script, "half"))
	c := h.submit(sh("c", "exit 0", "half"))
	for _, id := range []string{a.ID, b.ID} {
		if j := h.state(id, jobs.Running); j.Placement.PlannedShare() != 50 {
			t.Errorf("job %s planned at %d %%, want 50", id, j.Placement.PlannedShare())
		}
	}
	if j, _ := h.n.Job(c.ID); j.State != jobs.Pending {
		t.Errorf("third job %s, want pending while two share the GPU", j.State)
	}
	// The plan view is published at the end of the decision that started
	// the jobs, a moment after their states.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := h.n.Plan()
		if len(v.Waiting) == 1 && v.Waiting[0] == c.ID && len(v.GPUs) == 1 && len(v.GPUs[0].Instances[0].Jobs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan %+v", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	open(t, gate)
	h.state(c.ID, jobs.Succeeded)
	if _, _, err := h.n.Submit(context.Background(), jobs.Spec{Command: []string{"x"}, Kind: jobs.Offline, MemoryMiB: 200000}, "", nil); !errors.As(err, new(*jobs.FieldError)) {
		t.Errorf("a job bigger than every instance: %v, want a FieldError", err)
	}
}

// TestCancel: a pending job is cancelled at once; a running one is
// stopped with SIGTERM and keeps its cancelled state with the signal; a
// finished one cannot be cancelled.
func TestCancel(t *testing.T) {
	h := newHarness(t, h200, false, curveEstimator{})
	run := h.submit(sh("runs", "sleep 60", ""))
	wait := h.submit(sh("waits", "sleep 60", ""))
	h.state(run.ID, jobs.Running)
	if j, err := h.n.Cancel(wait.ID, "no longer needed"); err != nil || j.State != jobs.Cancelled || j.Reason != "no longer needed" {
		t.Fatalf("cancel pending: %+v %v", j, err)
	}
	if _, err := h.n.Cancel(run.ID, ""); err != nil {
		t.Fatal(err)
	}
	j := h.until(run.ID, "cancelled with SIGTERM", func(j jobs.Job) bool { return j.State == jobs.Cancelled && j.Signal != "" })
	if j.Signal != "SIGTERM" {
		t.Errorf("cancelled job ended by %s, want SIGTERM", j.Signal)
	}
	var te *jobs.TransitionError
	if _, err := h.n.Cancel(run.ID, ""); !errors.As(err, &te) {
		t.Errorf("second cancel: %v, want a TransitionError", err)
	}
	if _, err := h.n.Cancel("0000000000000000", ""); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}

// TestRestartOnReshare: when a job arrives next to an offline job, and
// again when it ends, Algorithm 1 re-shares the instance; MPS fixes a
// share when a process starts, so the offline job is stopped (SIGTERM, the
// checkpoint contract) and started again at its new share with its
// restart count raised, and each change is recorded with its cause.
func TestRestartOnReshare(t *testing.T) {
	// The clock is an hour ahead of the jobs' starts: each has run an
	// hour, so that the restart gate finds a restart worth its cost.
	// Under MPS, which enforces the shares (without it no share is set).
	m := fakeMPS(t)
	h := newHarnessWith(t, h200, false, curveEstimator{"half_train": 50}, nil, func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Hour) }
		c.MPS = m
	})
	out := filepath.Join(t.TempDir(), "restarts")
	// The full job records each start's restart count and share, and
	// exits 0 on SIGTERM (its checkpoint) or after a while. Its checkpoint
	// is older than its start: it saves on SIGTERM, so a restart loses
	// no work.
	full := h.submit(sh("full", `touch -d @1 "$MMK_CHECKPOINT_DIR/ckpt"; echo "$MMK_RESTART_COUNT $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" >> `+out+`; trap 'exit 0' TERM; sleep 30 & wait`, "lin"))
	h.until(full.ID, "running at 100 %", func(j jobs.Job) bool {
		return j.State == jobs.Running && j.Placement != nil && j.Placement.MPSPercent == 100
	})
	// A job of demand 50 % arrives: the full one is re-shared to 50 %.
	script, gate := gated(t, "0")
	half := h.submit(sh("half", script, "half"))
	h.state(half.ID, jobs.Running)
	h.until(full.ID, "restarted at 50 %", func(j jobs.Job) bool {
		return j.State == jobs.Running && j.Restarts == 1 && j.Placement != nil && j.Placement.MPSPercent == 50
	})
	// Its second start has written its line before the half job ends: a
	// restart that came first would stop the shell before its echo (on a
	// loaded machine the line comes a little after the job runs).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(strings.Fields(string(b))) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted job wrote %q in 10 s", b)
		}
	}
	// It ends: the full one gets the whole GPU again.
	open(t, gate)
	h.until(full.ID, "restarted at 100 %", func(j jobs.Job) bool {
		return j.State == jobs.Running && j.Restarts == 2 && j.Placement != nil && j.Placement.MPSPercent == 100
	})
	// The job is running before its shell has written its line: on a
	// busy machine the third line comes a little later.
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if got = strings.Fields(string(b)); len(got) >= 6 || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, []string{"0", "100", "1", "50", "2", "100"}) {
		t.Errorf("starts (restart count, share): %v", got)
	}
	rs, err := h.n.Reconfigs(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || !slices.Contains(rs[0].Restarted, full.ID) || !strings.Contains(rs[0].Cause, "completion of job "+half.ID) || !strings.Contains(rs[0].Cause, "restart gate: gain 0.500") {
		t.Errorf("reconfigurations %+v", rs)
	}
}

// TestManageMIG: with mig.manage on, a GPU in MIG mode with no instance
// gets a layout for the job that arrives, through the backend, and the
// change is recorded with its steps; with it off, the job waits.
func TestManageMIG(t *testing.T) {
	for _, manage := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[manage], func(t *testing.T) {
			h := newHarness(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true}}, manage, curveEstimator{})
			j := h.submit(sh("job", "exit 0", ""))
			if !manage {
				time.Sleep(100 * time.Millisecond)
				if j, _ := h.n.Job(j.ID); j.State != jobs.Pending {
					t.Errorf("without mig.manage the job is %s, want pending (no instance)", j.State)
				}
				return
			}
			h.state(j.ID, jobs.Succeeded)
			insts, err := h.backend.Instances(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(insts) == 0 {
				t.Fatal("no instance was created")
			}
			rs, err := h.n.Reconfigs(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || len(rs[len(rs)-1].Steps) == 0 || rs[len(rs)-1].From != "no instances" {
				t.Errorf("reconfigurations %+v", rs)
			}
		})
	}
}

// testRunner is a runner of jobs under dir/jobs whose shim is the test
// binary.
func testRunner(t *testing.T, dir string, log *slog.Logger) *jobs.Runner {
	t.Helper()
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: os.Args[0],
		ShimEnv: []string{"MMK_NODE_TEST_SHIM=1"}, StopGrace: 5 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

// testWriter sends the node's log to the test's output if MMK_TEST_LOG is set.
func testWriter(t *testing.T) io.Writer {
	if os.Getenv("MMK_TEST_LOG") == "" {
		return io.Discard
	}
	return os.Stderr
}

// buildHookFakes builds the hook, the fake CUPTI and the replay job (make
// hook-fakes) into a temporary directory.
func buildHookFakes(t *testing.T) (hook, cupti, replay string) {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("make", "-s", "-C", root, "hook-fakes", "FAKE_DIR="+dir).CombinedOutput(); err != nil {
		t.Fatalf("make hook-fakes: %v\n%s", err, out)
	}
	return filepath.Join(dir, "libmmkhook.so"), filepath.Join(dir, "libfakecupti.so"), filepath.Join(dir, "replay")
}

// TestKernelSchedulingAndProfile: with kernel scheduling on, a job gets
// the hook and its instance's scheduler, which sees its launches; its task
// key had no profile, so the hook profiles its first runs and mmkd writes
// the profile where the scheduler reads it.
func TestKernelSchedulingAndProfile(t *testing.T) {
	hook, cupti, replay := buildHookFakes(t)
	var b strings.Builder
	for range 5 {
		b.WriteString("k1 4 1 1 128 1 1 100 20\nk2 8 1 1 256 1 1 200 20\nsync 3000\n")
	}
	kernels := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(kernels, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := &SchedConfig{Policy: "fikit", Hook: hook, Cupti: cupti, SocketDir: filepath.Join(dir, "run"), ProfileDir: filepath.Join(dir, "profiles")}
	h := newHarnessWith(t, h200, false, curveEstimator{}, sc)
	spec := jobs.Spec{Name: "replay", Command: []string{replay, kernels, "20"}, Kind: jobs.Online, TaskKey: "replay-job"}
	j := h.submit(spec)
	j = h.state(j.ID, jobs.Succeeded)
	// The server counts what the task published once it sees the task's
	// socket close, a moment after the job ended.
	for deadline := time.Now().Add(10 * time.Second); ; {
		scheds := h.n.Schedulers()
		if len(scheds) == 1 && scheds[0].Instance == j.Placement.InstanceKey && scheds[0].Counters.Kernels == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedulers %+v: want the job's instance with its 200 kernels", scheds)
		}
		time.Sleep(5 * time.Millisecond)
	}
	path, err := kernelsched.ProfilePath(sc.ProfileDir, "replay-job")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := kernelsched.LoadProfileFor(sc.ProfileDir, "replay-job")
		if err == nil && p != nil {
			if len(p.Kernels) != 2 || p.Runs < 1 {
				t.Errorf("profile %s: %d kernel ids, %d runs", path, len(p.Kernels), p.Runs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no profile at %s (%v)", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNoProfilingUnderFifo: a policy that decides without kernel profiles
// (fifo, mmkd's default) runs no profiling phase: the job runs, and no
// trace or profile is written for its task key.
func TestNoProfilingUnderFifo(t *testing.T) {
	hook, cupti, replay := buildHookFakes(t)
	kernels := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(kernels, []byte("k1 4 1 1 128 1 1 100 20\nsync 3000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := &SchedConfig{Policy: "fifo", Hook: hook, Cupti: cupti, SocketDir: filepath.Join(dir, "run"), ProfileDir: filepath.Join(dir, "profiles")}
	h := newHarnessWith(t, h200, false, curveEstimator{}, sc)
	j := h.submit(jobs.Spec{Name: "replay", Command: []string{replay, kernels, "50"}, Kind: jobs.Online, TaskKey: "replay-job"})
	h.state(j.ID, jobs.Succeeded)
	time.Sleep(300 * time.Millisecond) // the loop collects finished phases
	entries, err := os.ReadDir(sc.ProfileDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("profile directory holds %d files under fifo, want none (no profiling phase)", len(entries))
	}
}

// TestManageMIGReplacesInstances: with mig.manage on, a GPU cut into seven
// 1g instances gets a job no 1g instance can hold: the layout changes,
// destroying instances the GPU holds (by their real ids), and the job
// runs; the change is recorded with its steps.
func TestManageMIGReplacesInstances(t *testing.T) {
	h := newHarness(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true,
		Layout: "1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+1g.10gb@4+1g.10gb@5+1g.10gb@6"}}, true, curveEstimator{})
	spec := sh("big", "exit 0", "")
	spec.MemoryMiB = 30000
	j := h.submit(spec)
	j = h.state(j.ID, jobs.Succeeded)
	if j.Placement == nil || j.Placement.Profile == "1g.10gb" {
		t.Errorf("placement %+v: want an instance larger than 1g", j.Placement)
	}
	rs, err := h.n.Reconfigs(0)
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	for _, r := range rs {
		if r.Error == "" && len(r.Steps) > 0 && strings.Contains(strings.Join(r.Steps, " "), "destroy") {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no successful reconfiguration that destroys instances: %+v", rs)
	}
}

// TestExitOfARestartingJob: a job being restarted that ended on its own
// before the stop reached it is done, not started again; one the stop
// ended goes back to pending with its restart count raised.
func TestExitOfARestartingJob(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exit     jobs.Exit
		want     jobs.State
		restarts int
	}{
		{"ended on its own", jobs.Exit{Code: 0}, jobs.Succeeded, 0},
		{"failed on its own", jobs.Exit{Code: 2}, jobs.Failed, 0},
		{"stopped", jobs.Exit{Code: 0, Stopped: true}, jobs.Pending, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			now := time.Now()
			id := jobs.NewID(now)
			if _, _, err := store.Create(jobs.Job{ID: id, Spec: sh("j", "true", ""), State: jobs.Pending, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			for _, s := range []jobs.State{jobs.Placed, jobs.Running, jobs.Restarting} {
				if _, err := store.Transition(id, s, now, "", nil); err != nil {
					t.Fatal(err)
				}
			}
			backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: h200})
			if err != nil {
				t.Fatal(err)
			}
			defer backend.Close()
			runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: os.Args[0]})
			if err != nil {
				t.Fatal(err)
			}
			n, err := New(Config{Backend: backend, Store: store, Runner: runner, Estimator: curveEstimator{}})
			if err != nil {
				t.Fatal(err)
			}
			n.exited(context.Background(), exitEvent{id: id, exit: tc.exit})
			j, err := n.Job(id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != tc.want || j.Restarts != tc.restarts {
				t.Errorf("%s, %d restarts; want %s, %d", j.State, j.Restarts, tc.want, tc.restarts)
			}
		})
	}
}

// TestRecoverPlacedJobThatEnded: mmkd stopped after a job's process
// started but before it recorded it running; the job ended meanwhile.
// The next mmkd records how it ended instead of leaving it placed.
func TestRecoverPlacedJobThatEnded(t *testing.T) {
	store, runner := offlineParts(t)
	now := time.Now()
	id := jobs.NewID(now)
	if _, _, err := store.Create(jobs.Job{ID: id, Spec: sh("j", "exit 4", ""), State: jobs.Pending, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	pl := &jobs.Placement{GPU: 0, InstanceKey: "gpu0", MPSPercent: 100}
	if _, err := store.Transition(id, jobs.Placed, now, "", func(j *jobs.Job) { j.Placement = pl }); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Start(jobs.Launch{JobID: id, Argv: []string{"sh", "-c", "exit 4"}, Env: []string{"PATH=" + os.Getenv("PATH")}}); err != nil {
		t.Fatal(err)
	}
	if e := <-runner.Wait(context.Background(), id); e.Code != 4 {
		t.Fatalf("exit %+v", e)
	}
	n := recovered(t, store, runner)
	j, err := n.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != jobs.Failed || j.ExitCode == nil || *j.ExitCode != 4 {
		t.Errorf("after recovery: %s, exit %v; want failed with exit 4", j.State, j.ExitCode)
	}
}

// TestRetention: a job finished longer ago than the retention goes, with
// its record, events and directory; a recent one stays.
func TestRetention(t *testing.T) {
	h := newHarness(t, h200, false, curveEstimator{})
	old := h.submit(sh("old", "exit 0", ""))
	h.state(old.ID, jobs.Succeeded)
	dir := filepath.Dir(h.n.cfg.Runner.LogPath(old.ID))
	if err := h.n.onLoop(context.Background(), func() {
		h.n.cfg.Retention = time.Hour
		h.n.pruneAt(time.Now().Add(2 * time.Hour))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.n.Job(old.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("job past its retention: %v", err)
	}
	if _, err := h.n.cfg.Store.Get(old.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("store record past retention: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job directory %s: %v", dir, err)
	}
	recent := h.submit(sh("recent", "exit 0", ""))
	h.state(recent.ID, jobs.Succeeded)
	if err := h.n.onLoop(context.Background(), h.n.prune); err != nil {
		t.Fatal(err)
	}
	if _, err := h.n.Job(recent.ID); err != nil {
		t.Errorf("a recent job went: %v", err)
	}
}

// offlineParts are a store and a runner in a test directory, for a node
// that is not running yet.
func offlineParts(t *testing.T) (*jobs.Store, *jobs.Runner) {
	t.Helper()
	dir := t.TempDir()
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: os.Args[0],
		ShimEnv: []string{"MMK_NODE_TEST_SHIM=1"}, Logger: slog.New(slog.NewTextHandler(testWriter(t), nil))})
	if err != nil {
		t.Fatal(err)
	}
	return store, runner
}

// recovered is a node on a fake H200 over store and runner after its
// recovery (what Run does first), its loop not started.
func recovered(t *testing.T, store *jobs.Store, runner *jobs.Runner) *Node {
	t.Helper()
	backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: h200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	n, err := New(Config{Backend: backend, Store: store, Runner: runner, Estimator: curveEstimator{}, Log: slog.New(slog.NewTextHandler(testWriter(t), nil))})
	if err != nil {
		t.Fatal(err)
	}
	n.recover(context.Background())
	return n
}

// grepEnv are the lines of env that contain sub.
func grepEnv(env, sub string) string {
	var out []string
	for _, l := range strings.Split(env, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
