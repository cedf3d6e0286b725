package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
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

// TestRecordsReadDuringTrialWrite: once the check's child says the
// store's structure is whole, mmkd reads the records while the child
// goes on (its trial write), and writes nothing before the child's
// verdict: a child that says "whole" and then finds damage leaves the
// store as it was, its bad record not set aside; one that waits for the
// read before it passes sees it done; a child that never says "whole"
// (an older check command) is waited for, as before. So with each
// thing a start mends: a bad record (set aside) and an idempotency key
// that does not find its job (put again; found before the verdict).
func TestRecordsReadDuringTrialWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string // sh -c; $F is a file the read makes, $FD the descriptor to say "whole" on
		damaged bool
	}{
		{"whole, then damage found", `echo "structure whole" >&$` + checkFDEnv + `; exit 3`, true},
		{"whole, then the read seen, then passed", `echo "structure whole" >&$` + checkFDEnv + `; for i in $(seq 100); do [ -e "$F" ] && exit 0; sleep 0.05; done; exit 3`, false},
		{"never says whole", `exit 0`, false},
	} {
		for _, mend := range []string{"record", "key"} {
			t.Run(tc.name+"/"+mend, func(t *testing.T) { readDuringTrialWrite(t, tc.script, mend, tc.damaged) })
		}
	}
}

// readDuringTrialWrite is a case of TestRecordsReadDuringTrialWrite: job
// 2 of a store has a bad record, or (mend "key") a key its idempotency
// bucket lacks; the check child runs script.
func readDuringTrialWrite(t *testing.T, script, mend string, damaged bool) {
	path, _ := filledStore(t, 2)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if mend == "key" {
			return put(tx.Bucket(bucketJobs), newJob("0000000000000002", "key-2"))
		}
		return tx.Bucket(bucketJobs).Put([]byte("0000000000000002"), []byte("{not json"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "read")
	read := false
	s, err := OpenStoreWith(path, OpenOptions{CheckCommand: []string{"sh", "-c", script, "sh"}, CheckEnv: []string{"F=" + marker},
		afterRead: func() {
			read = true
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				t.Error(err)
			}
		}})
	if damaged {
		if !errors.Is(err, ErrStoreDamaged) {
			t.Fatalf("err %v, want the child's damage", err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Error("the store was written before the check's verdict")
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !read {
		t.Error("the records were not read")
	}
	aside, mended := s.SetAside(), s.KeysMended()
	switch {
	case mend == "record" && (len(aside) != 1 || aside[0].Key != "0000000000000002"):
		t.Errorf("set aside %+v, want the bad record", aside)
	case mend == "key" && (len(aside) != 0 || !slices.Equal(mended, []string{"key-2"})):
		t.Errorf("set aside %+v, keys mended %v; want key-2 mended, nothing set aside", aside, mended)
	}
	if mend == "key" {
		if j, created, err := s.Create(newJob("zzzzzzzzzzzzzzzz", "key-2")); err != nil || created || j.ID != "0000000000000002" {
			t.Errorf("a retry of key-2: job %s, created %v, %v; want job 2", j.ID, created, err)
		}
	}
}

// TestCheckStoreSaysWhole: the real check child (mmkd check-store, here
// the test binary) says the structure is whole on the descriptor it is
// given, and leaves its copy as it found it (the trial write is rolled
// back).
func TestCheckStoreSaysWhole(t *testing.T) {
	path, _ := filledStore(t, 3)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(exe, path)
	cmd.Env = append(os.Environ(), testModeEnv+"=check-store", checkFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	out, err := cmd.CombinedOutput()
	w.Close()
	if err != nil {
		t.Fatalf("check-store: %v\n%s", err, out)
	}
	said, _ := io.ReadAll(r)
	if string(said) != structureWhole {
		t.Errorf("the child said %q, want %q", said, structureWhole)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the trial write changed the file")
	}
}

// TestRewriteTouchesEveryLeaf: the trial write puts one key of each leaf
// page again, of every bucket and of a bucket nested in one (inline, in
// its parent's page, and one of pages of its own): as many keys as the
// buckets have leaf pages and inline buckets, each put reading its page
// into a node, as a first write would.
func TestRewriteTouchesEveryLeaf(t *testing.T) {
	path, _ := filledStore(t, 600)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		// A key in each bucket: an empty one has no page to read.
		for _, name := range allBuckets {
			if err := tx.Bucket(name).Put([]byte("0"), []byte("v")); err != nil {
				return err
			}
		}
		jobs := tx.Bucket(bucketJobs)
		small, err := jobs.CreateBucket([]byte("nested-inline"))
		if err != nil {
			return err
		}
		if err := small.Put([]byte("a"), []byte("1")); err != nil {
			return err
		}
		big, err := tx.Bucket(bucketEvents).CreateBucket([]byte("nested-paged"))
		if err != nil {
			return err
		}
		for i := range 300 {
			if err := big.Put(fmt.Appendf(nil, "%04d", i), bytes.Repeat([]byte("x"), 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	info := db.Info()
	want, got := 0, 0
	err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		st := b.Stats()
		want += st.LeafPageN + st.InlineBucketN
		n, err := rewrite(b, info.Data, info.PageSize)
		got += n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want < 50 {
		t.Errorf("the trial write put %d keys; the buckets have %d leaf pages and inline buckets (want several dozen)", got, want)
	}
}
