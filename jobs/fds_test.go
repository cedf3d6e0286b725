package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestJobInheritsNoDescriptors (issue 38, row 12): a descriptor mmkd
// inherited without close-on-exec (from whatever started it) reaches
// neither a job run as mmkd's user nor one run as another user: the job
// lists its own /proc/self/fd and sees only its stdin, stdout and
// stderr (and the directory ls reads). Before the fix both jobs held
// the descriptor.
func TestJobInheritsNoDescriptors(t *testing.T) {
	// A temporary directory other users can pass through (t.TempDir's
	// are 0700), for the job run as nobody.
	root, err := os.MkdirTemp("", "mmk-fds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "mmkd-inherited-secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened as a parent of mmkd could have left it: without O_CLOEXEC.
	fd, err := unix.Open(secret, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	r := newTestRunner(t, RunnerOptions{Root: filepath.Join(root, "jobs")})
	for _, tc := range []struct {
		name string
		user *User
	}{
		{"as mmkd's user", nil},
		{"as another user", &User{UID: nobody, GID: nobody, Groups: []uint32{nobody}, Name: "nobody", Home: "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.user != nil && os.Geteuid() != 0 {
				t.Skip("needs root to run a job as another user")
			}
			l := shLaunch("", `cd /proc/self/fd && for f in *; do echo "$f $(readlink "$f")"; done`)
			l.User = tc.user
			start(t, r, l)
			if e := wait(t, r, l.JobID); e.Code != 0 || e.Error != "" {
				t.Fatalf("exit %+v", e)
			}
			log := readLog(t, r.LogPath(l.JobID))
			for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
				if n, target, _ := strings.Cut(line, " "); strings.Contains(target, "mmkd-inherited-secret") {
					t.Errorf("the job holds descriptor %s -> %s (mmkd's %d)", n, target, fd)
				}
			}
			if !strings.Contains(log, "0 ") || !strings.Contains(log, "2 ") {
				t.Fatalf("the job's descriptor list is odd:\n%s", log)
			}
		})
	}
}
