package jobs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testModeEnv makes the test binary something else than the tests: "shim"
// runs ShimMain (the Runner under test re-executes the test binary as its
// shim), "crash-helper" runs crashHelper (crash_test.go).
const testModeEnv = "MMK_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(testModeEnv) {
	case "shim":
		os.Exit(ShimMain(os.Args[1:]))
	case "shim-full-disk":
		// A disk that fills up once the job runs: no new exit record.
		os.Exit(shimMain(os.Args[1:], func(path string, data []byte) error {
			if filepath.Base(path) == exitFile {
				return &os.PathError{Op: "write", Path: path, Err: unix.ENOSPC}
			}
			return WriteRecordFile(path, data)
		}))
	case "crash-helper":
		os.Exit(crashHelper())
	case "check-store":
		os.Exit(CheckStoreMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// The methods mmkd's node uses (node.Runner), checked at compile time.
var _ interface {
	Start(l Launch) (Proc, error)
	Adopt(id string) (Proc, *Exit, error)
	Wait(ctx context.Context, id string) <-chan Exit
	Stop(id string, grace time.Duration) error
	LogPath(id string) string
	CheckpointDir(id string) (string, error)
} = (*Runner)(nil)

// eventually bounds every wait of these tests; it is generous because the
// tests never measure speed, only that things happen.
const eventually = 60 * time.Second

// testShim sets the options that make the test binary the shim.
func testShim(o RunnerOptions) RunnerOptions {
	o.ShimPath = os.Args[0]
	o.ShimEnv = []string{testModeEnv + "=shim"}
	return o
}

// testLog writes the Runner's log to the test's output until the test
// ends, and drops it after (a reaper goroutine may log late).
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func newTestRunner(t *testing.T, o RunnerOptions) *Runner {
	t.Helper()
	if o.Root == "" {
		o.Root = t.TempDir()
	}
	w := &testLog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	o.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := NewRunner(testShim(o))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// jobEnv is the test's environment (for PATH) without the test mode, with
// extra variables.
func jobEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, testModeEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// shLaunch runs script with sh -c in dir.
func shLaunch(dir, script string, env ...string) Launch {
	return Launch{JobID: NewID(time.Now()), Argv: []string{"sh", "-c", script}, Env: jobEnv(env...), WorkDir: dir}
}

// start starts a job and, when the test ends, kills it if it still runs
// and waits for its end (so that the temporary directories can go).
func start(t *testing.T, r *Runner, l Launch) Proc {
	t.Helper()
	p, err := r.Start(l)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stopAtEnd(t, r, l.JobID)
	return p
}

// stopAtEnd kills the job when the test ends, if it still runs, and waits
// for its end.
func stopAtEnd(t *testing.T, r *Runner, id string) { stopWhenDone(t, r, id, false) }

// stopLostAtEnd is stopAtEnd for a job whose shim the test kills: Stop
// may find it lost and kill it itself, saying so with ErrSupervisorLost.
func stopLostAtEnd(t *testing.T, r *Runner, id string) { stopWhenDone(t, r, id, true) }

// stopWhenDone is stopAtEnd, ErrSupervisorLost from Stop taken with
// lostOK.
func stopWhenDone(t *testing.T, r *Runner, id string, lostOK bool) {
	t.Cleanup(func() {
		err := r.Stop(id, time.Millisecond)
		if errors.Is(err, ErrNotStarted) || lostOK && errors.Is(err, ErrSupervisorLost) {
			return // removed, or killed by Stop
		} else if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), eventually)
		defer cancel()
		if _, err := r.wait(ctx, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// wait waits for the job's end through the Wait channel.
func wait(t *testing.T, r *Runner, id string) Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	e, ok := <-r.Wait(ctx, id)
	if !ok {
		t.Fatalf("wait for job %s: %v", id, ctx.Err())
	}
	return e
}

// waitFile waits for a file the job creates.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// exitCases are job scripts and the ends they must be recorded with.
var exitCases = []struct {
	name   string
	script string
	code   int
	signal string
}{
	{"exit 0", "exit 0", 0, ""},
	{"exit 3", "exit 3", 3, ""},
	{"killed by SIGKILL", "kill -KILL $$", -1, "SIGKILL"},
	{"killed by SIGUSR2", "kill -USR2 $$", -1, "SIGUSR2"},
}

func TestRunnerExit(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	for _, tc := range exitCases {
		t.Run(tc.name, func(t *testing.T) {
			l := shLaunch(t.TempDir(), tc.script)
			p := start(t, r, l)
			if p.PID <= 0 || p.ShimPID <= 0 || p.PID == p.ShimPID || p.StartedAt.IsZero() {
				t.Fatalf("Proc %+v", p)
			}
			e := wait(t, r, l.JobID)
			if e.Code != tc.code || e.Signal != tc.signal || e.Error != "" || e.At.IsZero() {
				t.Fatalf("exit %+v, want code %d signal %q", e, tc.code, tc.signal)
			}
			// The record stays: Adopt and Wait see the same end again.
			ap, ae, err := r.Adopt(l.JobID)
			if err != nil || ae == nil || *ae != e || ap.PID != p.PID {
				t.Fatalf("Adopt after the end: %+v %+v %v, want %+v %+v", ap, ae, err, p, e)
			}
		})
	}
}

func TestRunnerStartFailure(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	for _, tc := range []struct {
		name string
		argv []string
		dir  string
		want string
	}{
		{"no such file", []string{"/nonexistent/mmk-prog"}, "", "no such file or directory"},
		{"not in PATH", []string{"mmk-no-such-program", "-x"}, "", `"mmk-no-such-program": executable file not found`},
		{"bad workdir", []string{"true"}, "/nonexistent/mmk-dir", "/nonexistent/mmk-dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Launch{JobID: NewID(time.Now()), Argv: tc.argv, Env: jobEnv(), WorkDir: tc.dir}
			_, err := r.Start(l)
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, tc.want) || se.JobID != l.JobID {
				t.Fatalf("Start: %v, want a *StartError saying %q", err, tc.want)
			}
			_, e, err := r.Adopt(l.JobID)
			if err != nil || e == nil || e.Code != -1 || e.Error != se.Reason {
				t.Fatalf("Adopt: %+v %v, want the exit record with the reason", e, err)
			}
			if w := wait(t, r, l.JobID); w != *e {
				t.Fatalf("Wait: %+v, want %+v", w, *e)
			}
			if _, err := os.Stat(filepath.Join(r.Dir(l.JobID), launchFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the launch file (the job's environment) was left: %v", err)
			}
		})
	}
}

func TestRunnerLogHoldsBothStreams(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	l := shLaunch(t.TempDir(), "echo out; echo err >&2; echo out2; printf tail >&2")
	start(t, r, l)
	wait(t, r, l.JobID)
	if got, want := readLog(t, r.LogPath(l.JobID)), "out\nerr\nout2\ntail"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestRunnerLogRotation(t *testing.T) {
	const limit = 4096
	r := newTestRunner(t, RunnerOptions{LogMaxBytes: limit})
	// About 20 KiB of numbered lines: five times the cap.
	l := shLaunch(t.TempDir(), `i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done`)
	start(t, r, l)
	wait(t, r, l.JobID)
	var all strings.Builder
	for i := range 2000 {
		all.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	cur := readLog(t, r.LogPath(l.JobID))
	prev := readLog(t, r.LogPath(l.JobID)+".1")
	switch {
	case len(cur) > limit || len(prev) > limit:
		t.Fatalf("log %d bytes, log.1 %d bytes: each may hold at most %d", len(cur), len(prev), limit)
	case len(prev) != limit:
		t.Fatalf("log.1 holds %d bytes, want a full file of %d", len(prev), limit)
	case !strings.HasSuffix(all.String(), prev+cur):
		t.Fatalf("log.1 then log are not the end of the output:\nlog.1 %q\nlog %q", prev, cur)
	case !strings.HasSuffix(cur, "line 1999\n"):
		t.Fatalf("log does not end with the newest output: %q", cur)
	}
	entries, err := os.ReadDir(r.Dir(l.JobID))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), logFile+".") && e.Name() != logFile+".1" {
			t.Fatalf("log file %s: want only log and log.1", e.Name())
		}
	}
}

func TestRunnerEnvAndWorkdir(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	for _, tc := range []struct {
		name    string
		dir     string
		wantDir func(id string) string
	}{
		{"given workdir", work, func(string) string { return work }},
		{"default workdir is the job directory", "", r.Dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := shLaunch(tc.dir, `printf '%s|%s\n' "$MMK_TEST_VALUE" "$(pwd -P)"`, "MMK_TEST_VALUE=a b=c")
			start(t, r, l)
			if e := wait(t, r, l.JobID); e.Code != 0 {
				t.Fatalf("exit %+v", e)
			}
			dir, err := filepath.EvalSymlinks(tc.wantDir(l.JobID))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := readLog(t, r.LogPath(l.JobID)), "a b=c|"+dir+"\n"; got != want {
				t.Fatalf("log %q, want %q", got, want)
			}
		})
	}
}

func TestRunnerStop(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	for _, tc := range []struct {
		name   string
		script string
		grace  time.Duration
		code   int
		signal string
	}{
		// Each job creates "ready" once its trap is set.
		{"exits on SIGTERM by default", "touch ready; exec sleep 600", time.Hour, -1, "SIGTERM"},
		{"traps SIGTERM and exits 5", `trap "exit 5" TERM; touch ready; while :; do sleep 0.05; done`, time.Hour, 5, ""},
		{"ignores SIGTERM: killed after the grace", `trap "" TERM; touch ready; while :; do sleep 0.05; done`, 100 * time.Millisecond, -1, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			l := shLaunch(work, tc.script)
			p := start(t, r, l)
			waitFile(t, filepath.Join(work, "ready"))
			if st, err := readStat(p.PID); err != nil || st.PGID != p.PID {
				t.Fatalf("the job's process group is %d (%v), want its own (%d)", st.PGID, err, p.PID)
			}
			if err := r.Stop(l.JobID, tc.grace); err != nil {
				t.Fatal(err)
			}
			e := wait(t, r, l.JobID)
			if e.Code != tc.code || e.Signal != tc.signal || !e.Stopped {
				t.Fatalf("exit %+v, want code %d signal %q, stopped", e, tc.code, tc.signal)
			}
			if err := r.Stop(l.JobID, 0); err != nil {
				t.Fatalf("Stop of an ended job: %v", err)
			}
		})
	}
}

// TestRunnerStopDoesNotBlock: a Stop with a grace of an hour returns (or
// this test would time out), the job still runs, and a second Stop
// shortens the grace.
func TestRunnerStopDoesNotBlock(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	l := shLaunch(work, `trap "" TERM; touch ready; while :; do sleep 0.05; done`)
	start(t, r, l)
	waitFile(t, filepath.Join(work, "ready"))
	if err := r.Stop(l.JobID, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, e, err := r.Adopt(l.JobID); err != nil || e != nil {
		t.Fatalf("after a Stop with an hour's grace: exit %+v, %v; want the job still running", e, err)
	}
	if err := r.Stop(l.JobID, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, r, l.JobID); e.Signal != "SIGKILL" {
		t.Fatalf("exit %+v, want SIGKILL", e)
	}
}

// TestShimIgnoresSignals: SIGTERM, SIGINT and SIGHUP sent to the shim are
// logged and ignored; the shim still records the job's exit.
func TestShimIgnoresSignals(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	l := shLaunch(work, "while [ ! -e go ]; do sleep 0.02; done; exit 4")
	p := start(t, r, l)
	sigs := []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP}
	for _, s := range sigs {
		if err := unix.Kill(p.ShimPID, s); err != nil {
			t.Fatal(err)
		}
	}
	shimLog := filepath.Join(r.Dir(l.JobID), shimLogFile)
	deadline := time.Now().Add(eventually)
	for {
		text := readLog(t, shimLog)
		n := 0
		for _, s := range sigs {
			if strings.Contains(text, "signal="+unix.SignalName(s)) {
				n++
			}
		}
		if n == len(sigs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shim did not log the signals it ignored:\n%s", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, r, l.JobID); e.Code != 4 {
		t.Fatalf("exit %+v, want 4", e)
	}
}

func TestRunnerJobDirectory(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	l := shLaunch(work, "while [ ! -e go ]; do sleep 0.02; done")
	start(t, r, l)
	ckpt, err := r.CheckpointDir(l.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(ckpt); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("checkpoint directory: %v", err)
	}
	if st, err := os.Stat(r.Dir(l.JobID)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("job directory: %v %v, want mode 0700 (the launch file holds the environment)", st.Mode(), err)
	}
	if _, err := r.Start(l); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Start of a running job: %v, want ErrRunning", err)
	}
	if err := r.Remove(l.JobID); !errors.Is(err, ErrRunning) {
		t.Fatalf("Remove of a running job: %v, want ErrRunning", err)
	}
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wait(t, r, l.JobID)
	// A restart keeps the checkpoint and appends to the log.
	if err := os.WriteFile(filepath.Join(ckpt, "ckpt"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Argv = []string{"sh", "-c", `cat "$MMK_CHECKPOINT_DIR/ckpt"`}
	l.Env = jobEnv("MMK_CHECKPOINT_DIR=" + ckpt)
	start(t, r, l)
	if e := wait(t, r, l.JobID); e.Code != 0 {
		t.Fatalf("restart: exit %+v", e)
	}
	if got := readLog(t, r.LogPath(l.JobID)); got != "1" {
		t.Fatalf("log after the restart %q, want the checkpoint's content", got)
	}
	if err := r.Remove(l.JobID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Dir(l.JobID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("job directory after Remove: %v", err)
	}
}

func TestRunnerRefusesBadIDs(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	for _, id := range []string{"", "../../etc/passwd", "0123456789ABCDEF", "0123456789abcdeu", "0123456789abcde/", "0123456789abcdef0"} {
		t.Run(id, func(t *testing.T) {
			checks := map[string]error{
				"Start":      func() error { _, err := r.Start(Launch{JobID: id, Argv: []string{"true"}}); return err }(),
				"Adopt":      func() error { _, _, err := r.Adopt(id); return err }(),
				"Wait":       func() error { _, err := r.wait(context.Background(), id); return err }(),
				"Checkpoint": func() error { _, err := r.CheckpointDir(id); return err }(),
				"Stop":       r.Stop(id, 0),
				"Remove":     r.Remove(id),
			}
			for name, err := range checks {
				if err == nil || !strings.Contains(err.Error(), "not a job id") {
					t.Errorf("%s(%q): %v, want a refusal", name, id, err)
				}
			}
			if e := <-r.Wait(context.Background(), id); e.Code != -1 || !strings.Contains(e.Error, "not a job id") {
				t.Errorf("Wait(%q): %+v, want an Exit with the refusal", id, e)
			}
			if d, l := r.Dir(id), r.LogPath(id); d != "" || l != "" {
				t.Errorf("paths of %q: %q %q, want none", id, d, l)
			}
		})
	}
	entries, err := os.ReadDir(r.o.Root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("root holds %d entries (%v) after refused calls", len(entries), err)
	}
}

func TestRunnerUnknownJob(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	id := NewID(time.Now())
	if _, _, err := r.Adopt(id); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Adopt: %v, want ErrNotStarted", err)
	}
	if _, err := r.wait(context.Background(), id); !errors.Is(err, ErrNotStarted) {
		t.Errorf("wait: %v, want ErrNotStarted", err)
	}
	if err := r.Stop(id, 0); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Stop: %v, want ErrNotStarted", err)
	}
}

func TestRunnerWaitCancelled(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	l := shLaunch(t.TempDir(), "exec sleep 600")
	start(t, r, l)
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.Wait(ctx, l.JobID)
	cancel()
	if e, ok := <-ch; ok {
		t.Fatalf("Wait after cancel: %+v, want the channel closed without a value", e)
	}
}
