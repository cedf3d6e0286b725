package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// TestLostPidRecordKeepsJob (issue 38, row 5): a running job whose
// pid.json is lost (deleted by hand, a cleaner, a damaged disk) is
// found again by its shim (and its cgroup): it stays running, whether
// mmkd runs on or restarts, and a cancel stops it (cancelled, killed by
// SIGTERM). Before the fix the job was marked failed ("job was not
// started") while its shim and process ran on, and the cancel answered
// a TransitionError (409).
func TestLostPidRecordKeepsJob(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool // mmkd stops before pid.json goes and starts after
	}{
		{"while mmkd runs", false},
		{"across a restart of mmkd", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := startOn(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			j, _, err := s.n.Submit(context.Background(), sh("long", "sleep 60", ""), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			running := s.until(j.ID, func(j jobs.Job) bool { return j.State == jobs.Running })
			if tc.restart {
				s.stop()
			}
			if err := os.Remove(filepath.Join(dir, "jobs", j.ID, "pid.json")); err != nil {
				t.Fatal(err)
			}
			if tc.restart {
				if s, err = startOn(t, dir); err != nil {
					t.Fatal(err)
				}
			}
			defer s.stop()
			// Wait polls every 150 ms: a second is several looks.
			time.Sleep(time.Second)
			if got, err := s.n.Job(j.ID); err != nil || got.State != jobs.Running || got.PID != running.PID {
				t.Fatalf("after pid.json was lost: %+v %v, want running with pid %d", got, err, running.PID)
			}
			if _, err := s.n.Cancel(j.ID, "test"); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			end := s.until(j.ID, func(j jobs.Job) bool { return j.ExitCode != nil })
			if end.State != jobs.Cancelled || end.Signal != "SIGTERM" {
				t.Errorf("the job ended %s by %q, want cancelled by SIGTERM", end.State, end.Signal)
			}
			if _, err := jobs.ProcessGroup(running.PID); err == nil {
				t.Errorf("the job's process %d still runs", running.PID)
			}
		})
	}
}
