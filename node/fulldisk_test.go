package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// fullDiskRunner is the test runner whose record writes of the names in
// full fail as on a full disk (ENOSPC).
func fullDiskRunner(t *testing.T, full ...string) *jobs.Runner {
	t.Helper()
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(t.TempDir(), "jobs"), ShimPath: os.Args[0],
		ShimEnv: []string{"MMK_NODE_TEST_SHIM=1"}, StopGrace: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(testWriter(t), nil)),
		WriteRecord: func(path string, data []byte) error {
			for _, name := range full {
				if filepath.Base(path) == name {
					return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
				}
			}
			return jobs.WriteRecordFile(path, data)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

// stopFails is a runner whose Stop fails while fail is set.
type stopFails struct {
	*jobs.Runner
	fail  atomic.Bool
	tries atomic.Int32
}

func (r *stopFails) Stop(id string, grace time.Duration) error {
	r.tries.Add(1)
	if r.fail.Load() {
		return fmt.Errorf("stop job %s: signal shim: %w", id, syscall.EIO)
	}
	return r.Runner.Stop(id, grace)
}

// TestCancelOnFullDisk (issue 38, row 6): a cancel on a full disk stops
// the job: stop.json cannot be written, and the shim is told anyway (it
// uses the stop grace it was started with). A cancel whose stop cannot
// reach the job is not answered as done: the job stays running, holding
// its place, with a reason that says the cancel is pending and why; the
// answer wraps ErrCancelPending; the stop is tried again every 2 s,
// with nothing else happening, until the job is cancelled and stopped.
// A cancelled job holds its place until its process ended. Before the
// fix the first cancel was answered cancelled while the process ran on
// (the stop was never tried again), the second likewise, and the
// capacity of both was free at once.
func TestCancelOnFullDisk(t *testing.T) {
	t.Run("stop.json cannot be written", func(t *testing.T) {
		h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) { c.Runner = fullDiskRunner(t, "stop.json") })
		j := h.submit(sh("runs", "sleep 60", ""))
		h.state(j.ID, jobs.Running)
		if got, err := h.n.Cancel(j.ID, "test"); err != nil || got.State != jobs.Cancelled {
			t.Fatalf("cancel: %+v %v, want cancelled", got, err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			got, _ := h.n.Job(j.ID)
			if got.ExitCode != nil {
				if got.Signal != "SIGTERM" {
					t.Errorf("ended by %q, want SIGTERM", got.Signal)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cancelled job's process still runs 3 s after the cancel: %+v", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("the stop fails", func(t *testing.T) {
		r := &stopFails{Runner: fullDiskRunner(t)}
		h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) { c.Runner = r })
		j := h.submit(sh("runs", "sleep 60", ""))
		h.state(j.ID, jobs.Running)
		r.fail.Store(true)
		got, err := h.n.Cancel(j.ID, "test")
		if !errors.Is(err, ErrCancelPending) || !strings.Contains(err.Error(), "input/output error") {
			t.Fatalf("cancel whose stop fails: %+v %v, want ErrCancelPending naming the error", got, err)
		}
		got, _ = h.n.Job(j.ID)
		if got.State != jobs.Running || !strings.Contains(got.Reason, "cancel pending") {
			t.Fatalf("after the failed cancel: %s (%s), want running, cancel pending", got.State, got.Reason)
		}
		// Tried again with nothing else happening.
		h.until(j.ID, "tried again", func(jobs.Job) bool { return r.tries.Load() >= 3 })
		if got, _ := h.n.Job(j.ID); got.State != jobs.Running {
			t.Fatalf("while the stop fails: %s, want running", got.State)
		}
		r.fail.Store(false)
		end := h.until(j.ID, "cancelled and ended", func(j jobs.Job) bool { return j.State == jobs.Cancelled && j.ExitCode != nil })
		if end.Signal != "SIGTERM" || end.Reason != "test" {
			t.Errorf("ended %+v, want cancelled (test) by SIGTERM", end)
		}
	})

	t.Run("a cancelled job holds its place until it ends", func(t *testing.T) {
		h := newHarness(t, h200, false, curveEstimator{})
		gate := filepath.Join(t.TempDir(), "gate")
		// It ignores SIGTERM until the gate opens, then ends.
		big := jobs.Spec{Name: "big", Command: []string{"sh", "-c", `trap 'while [ ! -e ` + gate + ` ]; do sleep 0.02; done; exit 0' TERM; sleep 60 & wait`},
			Kind: jobs.Offline, MemoryMiB: 100 << 10}
		a := h.submit(big)
		h.state(a.ID, jobs.Running)
		big.Name = "waits"
		b := h.submit(big)
		if _, err := h.n.Cancel(a.ID, "test"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if got, _ := h.n.Job(b.ID); got.State != jobs.Pending {
			t.Fatalf("the waiting job is %s while the cancelled job's process still runs, want pending", got.State)
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h.until(a.ID, "ended", func(j jobs.Job) bool { return j.ExitCode != nil })
		h.state(b.ID, jobs.Running)
	})
}
