package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRunnerReset: a job placed again has its earlier run's records
// cleared before it starts, so that a crash of mmkd in between cannot make
// the old exit look like the new run's; a running job is refused; a job
// that ended on its own is not marked stopped.
func TestRunnerReset(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	l := shLaunch(work, "exit 0")
	if err := r.Reset(l.JobID); err != nil {
		t.Fatalf("reset of a job never started: %v", err)
	}
	start(t, r, l)
	e := wait(t, r, l.JobID)
	if e.Code != 0 || e.Stopped {
		t.Fatalf("exit %+v: want code 0, not stopped", e)
	}
	if err := r.Reset(l.JobID); err != nil {
		t.Fatal(err)
	}
	if _, ex, err := r.Adopt(l.JobID); ex != nil || !errors.Is(err, ErrNotStarted) {
		t.Fatalf("after reset: exit %+v, %v; want ErrNotStarted and no exit", ex, err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir(l.JobID), "log")); err != nil {
		t.Errorf("the log went with the reset: %v", err)
	}
	run := shLaunch(work, "sleep 60")
	start(t, r, run)
	stopAtEnd(t, r, run.JobID)
	if err := r.Reset(run.JobID); !errors.Is(err, ErrRunning) {
		t.Errorf("reset of a running job: %v, want ErrRunning", err)
	}
}
