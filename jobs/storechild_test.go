package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCheckInChildVerdicts: what a store check's child says of the store.
// Success passes; a child that finds damage, or crashes as a damaged
// store makes it crash (a fault, a panic, a fault signal), says damaged
// (the store is restored from its backup); one that could not check, ran
// out of memory, ran past its time or was killed from outside twice is no
// verdict: mmkd stops without touching the store (a good store must not
// be replaced by an older backup because its check was slow or killed).
func TestCheckInChildVerdicts(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "mmk.db")
	if err := os.WriteFile(store, []byte("not read by these children"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		script  string
		timeout time.Duration
		damaged bool
		ok      bool
	}{
		{"clean", "exit 0", 0, false, true},
		{"damage found", "exit 3", 0, true, false},
		{"a fault of the runtime", "echo 'fatal error: fault' >&2; echo '[signal SIGBUS: bus error]' >&2; exit 2", 0, true, false},
		{"a panic of bbolt's", "echo 'panic: circular dependency occurred' >&2; exit 2", 0, true, false},
		{"out of memory", "echo 'fatal error: runtime: out of memory' >&2; exit 2", 0, false, false},
		{"died of a fault signal", "kill -SEGV $$", 0, true, false},
		{"past its time", "sleep 5", 100 * time.Millisecond, false, false},
		{"could not check", "exit 1", 0, false, false},
		{"killed from outside", "kill -9 $$", 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkInChild(store, &OpenOptions{CheckCommand: []string{"sh", "-c", tc.script, "sh"}, CheckTimeout: tc.timeout})
			if (err == nil) != tc.ok || errors.Is(err, ErrStoreDamaged) != tc.damaged {
				t.Errorf("err %v: want ok %v, damaged %v", err, tc.ok, tc.damaged)
			}
			if tc.name == "killed from outside" && (err == nil || !strings.Contains(err.Error(), "killed twice")) {
				t.Errorf("err %v, want it to say the check was killed twice", err)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "mmk.db.check-*")); len(left) > 0 {
		t.Errorf("copies left behind: %v", left)
	}
}

// TestCheckWithoutRoom (issue 54, item 4): where the disk has no room
// for the check's copy (full, over quota, read-only), the copy is made
// in memory and the child checks it (as /dev/fd/3); the real check
// (mmkd check-store, here the test binary) opens, trial-writes and
// passes a healthy store that way, and the store opens with its jobs.
// Another error of the copy is no verdict and no fallback. Before, mmkd
// did not start: "copy_file_range: no space left on device".
func TestCheckWithoutRoom(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(newJob("0000000000000001", "k")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	failWith := func(errno error) func(*os.File, string) error {
		return func(dst *os.File, _ string) error {
			return &os.PathError{Op: "copy_file_range", Path: dst.Name(), Err: errno}
		}
	}
	for _, tc := range []struct {
		name  string
		errno error
		ok    bool
	}{
		{"disk full", unix.ENOSPC, true},
		{"over quota", unix.EDQUOT, true},
		{"read-only", unix.EROFS, true},
		{"an I/O error", unix.EIO, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The child sees a copy of the store as /dev/fd/3.
			script := `test "$1" = /dev/fd/3 && cmp -s "$1" ` + path
			err := checkInChild(path, &OpenOptions{CheckCommand: []string{"sh", "-c", script, "sh"}, copyStore: failWith(tc.errno)})
			if (err == nil) != tc.ok || errors.Is(err, ErrStoreDamaged) {
				t.Errorf("err %v, want ok %v and never damaged", err, tc.ok)
			}
		})
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err = OpenStoreWith(path, OpenOptions{CheckCommand: []string{exe}, CheckEnv: []string{testModeEnv + "=check-store"}, copyStore: failWith(unix.ENOSPC)})
	if err != nil {
		t.Fatalf("a healthy store on a full disk: %v", err)
	}
	defer s.Close()
	if j, err := s.Get("0000000000000001"); err != nil || j.State != Pending {
		t.Errorf("job: %s %v", j.State, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "mmk.db.check-*")); len(left) > 0 {
		t.Errorf("copies left behind: %v", left)
	}
}
