package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	// A temporary directory other users can pass through (t.TempDir's
	// are 0700).
	root, err := os.MkdirTemp("", "mmk-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, RunnerOptions{Root: filepath.Join(root, "jobs")})
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
