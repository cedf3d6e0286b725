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

// TestOwnerCheckedAtStart: a job starts only as a user who may run jobs
// now (jobs.allow_root as configured now), exists on this system and
// has the name recorded; a job of no recorded owner runs as mmkd's user
// and so needs allow_root when mmkd is root. Before (issue 54), a record
// whose owner read uid 0 ran as root with allow_root off.
func TestOwnerCheckedAtStart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mmkd runs jobs as other users only as root")
	}
	root := &jobs.Owner{UID: 0, GID: 0, Name: "root"}
	nobody := jobs.NamedOwner(65534, 65534)
	if nobody.Name == "" {
		t.Skip("no user of uid 65534 on this system")
	}
	for _, tc := range []struct {
		name      string
		owner     *jobs.Owner
		allowRoot bool
		err       string
	}{
		{"root, allowed", root, true, ""},
		{"root, not allowed now", root, false, "allow_root is off"},
		{"recorded without an owner, mmkd root", nil, false, "allow_root is off"},
		{"recorded without an owner, allowed", nil, true, ""},
		{"a user", &nobody, false, ""},
		{"a user recorded without a name", &jobs.Owner{UID: 65534, GID: 65534}, false, ""},
		{"another name", &jobs.Owner{UID: 65534, GID: 65534, Name: "bob"}, false, "recorded as bob"},
		{"no such user", &jobs.Owner{UID: 2_000_000_007, GID: 7, Name: "ghost"}, false, "not a user of this system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkOwnerAtStart(tc.owner, tc.allowRoot)
			if (tc.err == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.err) || !errors.Is(err, jobs.ErrForbidden))) {
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestRootRecordNotStartedWithoutAllowRoot: a queued job whose record
// names root (a damaged or older record) fails at its start, saying
// why, on an mmkd with jobs.allow_root off; it never runs.
func TestRootRecordNotStartedWithoutAllowRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mmkd runs jobs as other users only as root")
	}
	marker := filepath.Join(t.TempDir(), "ran")
	j := jobs.Job{ID: jobs.NewID(time.Now()), Spec: sh("as-root", "touch "+marker, ""), Priority: 5, MemoryMiB: 1024,
		TaskKey: "as-root", State: jobs.Pending, CreatedAt: time.Now(), UpdatedAt: time.Now(), Owner: &jobs.Owner{UID: 0, GID: 0, Name: "root"}}
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
		c.AllowRoot = false
		if _, _, err := c.Store.Create(j); err != nil {
			t.Fatal(err)
		}
	})
	got := h.state(j.ID, jobs.Failed)
	if !strings.Contains(got.Reason, "allow_root is off") {
		t.Errorf("reason %q, want allow_root named", got.Reason)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the job ran as root")
	}
}
