package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
