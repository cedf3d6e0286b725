package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// TestOwners: a job runs as the user who submitted it (the kernel's word
// for its uid, gid and groups, and HOME and USER in its environment),
// root's jobs are refused unless allowed, and a job of another user
// starts in its own checkpoint directory. Needs root.
func TestOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run jobs as another user")
	}
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) { c.AllowRoot = false })
	// The test's temporary directories are 0700: let the job's user
	// through to its checkpoint directory.
	chmodRunnerRoot(t, h)
	root := jobs.Owner{UID: 0, GID: 0, Name: "root"}
	if _, _, err := h.n.Submit(context.Background(), sh("as-root", "id", ""), "", &root); !errors.Is(err, jobs.ErrForbidden) {
		t.Errorf("a job of root without jobs.allow_root: %v, want refused", err)
	}
	if _, _, err := h.n.Submit(context.Background(), sh("as-mmkd", "id", ""), "", nil); !errors.Is(err, jobs.ErrForbidden) {
		t.Errorf("a job of mmkd's own user (root): %v, want refused", err)
	}
	nobody := jobs.NamedOwner(65534, 65534)
	j, created, err := h.n.Submit(context.Background(), sh("as-nobody",
		`grep -E '^(Uid|Gid):' /proc/self/status; echo "home=$HOME user=$USER pwd=$PWD"`, ""), "", &nobody)
	if err != nil || !created {
		t.Fatalf("submit as nobody: %v", err)
	}
	if j.Owner == nil || j.Owner.UID != 65534 {
		t.Fatalf("owner %+v", j.Owner)
	}
	j = h.state(j.ID, jobs.Succeeded)
	log, err := os.ReadFile(h.n.cfg.Runner.LogPath(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	ckpt, err := h.n.cfg.Runner.CheckpointDir(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65534\t65534", "Gid:\t65534\t65534", "pwd=" + ckpt} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the job's log lacks %q:\n%s", want, log)
		}
	}
	if nobody.Name != "" && !strings.Contains(string(log), "user="+nobody.Name) {
		t.Errorf("USER is not the job's user %q:\n%s", nobody.Name, log)
	}
}

// chmodRunnerRoot lets other users through the test's temporary
// directories to the runner's root (they are 0700).
func chmodRunnerRoot(t *testing.T, h *harness) {
	t.Helper()
	openToOthers(t, filepath.Dir(filepath.Dir(h.n.cfg.Runner.LogPath(jobs.NewID(time.Now())))), 0o711)
}

// openToOthers gives path and the directories above it, up to the
// system's temporary directory, mode.
func openToOthers(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	for d := path; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// ownerOf is a file's uid.
func ownerOf(st os.FileInfo) int {
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
