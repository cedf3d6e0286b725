package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunnerFindsRunWithoutPidRecord (issue 38, row 5): a running job
// whose pid.json is lost is found by its shim: Adopt returns its process
// and writes the record back as the shim wrote it (child, shim, cgroup),
// and Stop stops it. A job that lost both its record and its shim has
// what is left in its cgroup killed, and is ErrSupervisorLost. Before
// the fix both were ErrNotStarted and the job ran on.
func TestRunnerFindsRunWithoutPidRecord(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	l := shLaunch(t.TempDir(), "sleep 60")
	p := start(t, r, l)
	pidPath := filepath.Join(r.Dir(l.JobID), pidFile)
	before, _, err := readRecord(r.Dir(l.JobID), pidFile, parsePidRecord)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pidPath); err != nil {
		t.Fatal(err)
	}
	got, exit, err := r.Adopt(l.JobID)
	if err != nil || exit != nil || got.PID != p.PID || got.ShimPID != p.ShimPID {
		t.Fatalf("Adopt without pid.json: %+v %+v %v, want running %+v", got, exit, err, p)
	}
	after, found, err := readRecord(r.Dir(l.JobID), pidFile, parsePidRecord)
	if err != nil || !found || after.Child != before.Child || after.Shim != before.Shim || after.Cgroup != before.Cgroup {
		t.Fatalf("pid.json written back: %+v %v %v, want %+v", after, found, err, before)
	}
	if d := after.StartedAt.Sub(before.StartedAt); d < -time.Second || d > time.Second {
		t.Errorf("start time written back %v, want about %v", after.StartedAt, before.StartedAt)
	}
	if err := os.Remove(pidPath); err != nil {
		t.Fatal(err)
	}
	// A grace long enough for sleep to end on SIGTERM on a loaded
	// machine (with 1 ms, 1 of 3 runs under CPU hogs got the SIGKILL).
	if err := r.Stop(l.JobID, 5*time.Second); err != nil {
		t.Fatalf("Stop without pid.json: %v", err)
	}
	if e := wait(t, r, l.JobID); !e.Stopped || e.Signal != "SIGTERM" {
		t.Fatalf("exit %+v, want stopped by SIGTERM", e)
	}

	t.Run("shim gone too", func(t *testing.T) {
		if before.Cgroup == "" {
			t.Skip("no cgroup v2 here: a job without record and shim cannot be found")
		}
		l := shLaunch(t.TempDir(), "sleep 60")
		p, err := r.Start(l)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		stopLostAtEnd(t, r, l.JobID)
		if err := os.Remove(filepath.Join(r.Dir(l.JobID), pidFile)); err != nil {
			t.Fatal(err)
		}
		if err := unix.Kill(p.ShimPID, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(eventually)
		for {
			_, _, err := r.Adopt(l.JobID)
			if errors.Is(err, ErrSupervisorLost) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Adopt: %v, want ErrSupervisorLost", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st, err := readStat(p.PID); err == nil && st.State != 'Z' && st.State != 'X' {
			t.Errorf("the job's process %d still runs (%c)", p.PID, st.State)
		}
	})
}
