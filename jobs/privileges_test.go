package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nobody is an unused uid and gid the tests run jobs as.
const nobody = 65534

// TestJobRunsAsUser: a job launched for a user runs with that user's uid,
// gid and groups (read from the kernel's /proc/self/status, not from
// what the job is told), starts in its checkpoint directory, which it
// may write, and cannot write mmkd's records next to it. Needs root.
func TestJobRunsAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a job as another user")
	}
	r := passableRunner(t)
	u := &User{UID: nobody, GID: nobody, Groups: []uint32{nobody}, Name: "nobody", Home: "/"}
	l := shLaunch("", `grep -E '^(Uid|Gid|Groups):' /proc/self/status; echo "cwd $PWD"; `+
		`touch ckpt-ok && echo wrote-checkpoint; touch ../pid.json 2>/dev/null && echo wrote-records; exit 0`)
	l.User = u
	start(t, r, l)
	if e := wait(t, r, l.JobID); e.Code != 0 || e.Error != "" {
		t.Fatalf("exit %+v", e)
	}
	out, err := os.ReadFile(r.LogPath(l.JobID))
	if err != nil {
		t.Fatal(err)
	}
	log := string(out)
	ckpt := filepath.Join(r.Dir(l.JobID), checkpointDir)
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "Gid:\t65534\t65534\t65534\t65534", "Groups:\t65534",
		"cwd " + ckpt, "wrote-checkpoint"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "wrote-records") {
		t.Errorf("the job could write into its directory beside mmkd's records:\n%s", log)
	}
}

// TestJobRecordsAreMmkdsOnly (issue 38, row 11): the records of a job
// run as another user (whose directory others may pass through, 0711)
// are readable by mmkd's user only: the job's own user cannot read its
// pids and cgroup, nor can any other user who knows the job's id. Before
// the fix pid.json, exit.json and stop.json were 0644 and the job read
// its pid.json. Needs root.
func TestJobRecordsAreMmkdsOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a job as another user")
	}
	r := passableRunner(t)
	l := shLaunch("", `cat ../pid.json >/dev/null 2>&1 && echo read-pid-record; `+
		`while [ ! -e ../stop.json ] && [ ! -e stop ]; do sleep 0.02; done; exit 0`)
	l.User = &User{UID: nobody, GID: nobody, Groups: []uint32{nobody}, Name: "nobody", Home: "/"}
	l.Record = []byte(`{}`)
	start(t, r, l)
	if err := r.Stop(l.JobID, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wait(t, r, l.JobID)
	if log := readLog(t, r.LogPath(l.JobID)); strings.Contains(log, "read-pid-record") {
		t.Errorf("the job read its pid record: %q", log)
	}
	dir := r.Dir(l.JobID)
	for _, tc := range []struct {
		name string
		want os.FileMode
	}{
		{".", 0o711}, // passed through to the checkpoint directory
		{pidFile, 0o600},
		{exitFile, 0o600},
		{stopFile, 0o600},
		{jobFile, 0o600},
		{logFile, 0o600},
		{shimLogFile, 0o600},
	} {
		st, err := os.Stat(filepath.Join(dir, tc.name))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := st.Mode().Perm(); got != tc.want {
			t.Errorf("%s has mode %04o, want %04o", tc.name, got, tc.want)
		}
	}
}

// passableRunner is a runner whose jobs directory lies in a temporary
// directory other users can pass through (t.TempDir's are 0700).
func passableRunner(t *testing.T) *Runner {
	t.Helper()
	root, err := os.MkdirTemp("", "mmk-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	return newTestRunner(t, RunnerOptions{Root: filepath.Join(root, "jobs")})
}
