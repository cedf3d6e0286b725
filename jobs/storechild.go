package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"
)

// Exit statuses of CheckStoreMain. Any other status, or a signal, is a
// check that crashed: the store is damaged.
const (
	checkGood     = 0
	checkCouldNot = 1
	checkDamaged  = 3
)

// DefaultCheckTimeout bounds a child's check (OpenOptions.CheckTimeout):
// a damaged page can send bbolt's check round billions of pages.
const DefaultCheckTimeout = 5 * time.Minute

// OpenOptions say how OpenStoreWith opens a store.
type OpenOptions struct {
	// CheckCommand, when set, is the command line (program and
	// arguments) of a child process that checks the store: CheckStoreMain
	// ("mmkd check-store"). The path of a private copy of the store is
	// appended. Without it the check runs in this process, where a fault
	// in bbolt's check goroutine kills the process.
	CheckCommand []string
	// CheckEnv is added to the child's environment.
	CheckEnv []string
	// CheckTimeout bounds the child (DefaultCheckTimeout when 0); one that
	// runs longer is killed and the store is damaged.
	CheckTimeout time.Duration
	// Backup is the store's backup (path + BackupSuffix), from which
	// OpenStoreWith puts back the records it had to set aside; "": none.
	Backup string
	// copyStore, set by tests, copies the store into the check's copy
	// beside it (copyFile when nil): a full disk is made by failing it.
	copyStore func(dst *os.File, path string) error
	// afterRead, set by tests, is called once OpenStoreWith has read the
	// records, before it waits for the check's verdict.
	afterRead func()
}

// CheckStoreMain is the main of "mmkd check-store FILE", which mmkd runs
// as a child process (OpenOptions.CheckCommand) on a private copy of its
// store, so that a fault of bbolt's on a damaged file kills the child
// only. It opens FILE, checks it as openChecked does, says so to mmkd
// (sayWhole: mmkd reads the records meanwhile), and makes a trial write
// that puts a key of every leaf page again (so that each page is read
// into bbolt's nodes, as a first write to it would), rolled back. It opens FILE to write (bbolt locks it), which must be
// a copy. It returns 0 for a good
// store, 3 for a damaged one and 1 when it could not check (bad
// arguments, an unreadable file), with the reason on stderr.
func CheckStoreMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: mmkd check-store FILE (a copy of the job store: it is written; mmkd runs this itself)")
		return checkCouldNot
	}
	if err := trialCheck(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ErrStoreDamaged) {
			return checkDamaged
		}
		return checkCouldNot
	}
	return checkGood
}

// trialCheck is CheckStoreMain's work on the copy at path.
func trialCheck(path string) (err error) {
	db, err := openChecked(path, nil, true)
	if err != nil {
		return err
	}
	sayWhole()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job store %s: %w: the trial write panicked: %v", path, ErrStoreDamaged, r)
		}
	}()
	// Rolled back, not committed: what a first write reads (every page
	// into bbolt's nodes, where a damaged page panicked) is done; what a commit adds is written from those
	// nodes and pages the check found whole, and took two thirds of the
	// check's time (0.19-0.32 s of 0.5 s at 30,000 jobs, and a check
	// again after it).
	tx, err := db.Begin(true)
	if err == nil {
		err = trialWrite(tx)
		if rerr := tx.Rollback(); err == nil {
			err = rerr
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if noRoom(err) {
			// A full or read-only disk says nothing of the store.
			return fmt.Errorf("job store %s: no room to check it (its copy's trial write): %w", path, err)
		}
		return fmt.Errorf("job store %s: %w: the trial write failed: %v", path, ErrStoreDamaged, err)
	}
	return nil
}

// trialWrite puts a key of every leaf page of every bucket again in tx
// (rewrite), after making the buckets mmkd's first write makes.
func trialWrite(tx *bolt.Tx) error {
	for _, b := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	info := tx.DB().Info()
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		_, err := rewrite(b, info.Data, info.PageSize)
		return err
	})
}

// sayWhole tells mmkd, on the descriptor checkFDEnv names (if any),
// that the store's structure is whole: it may read the records while
// the trial write goes on.
func sayWhole() {
	n, err := strconv.Atoi(os.Getenv(checkFDEnv))
	if err != nil || n < 3 {
		return
	}
	f := os.NewFile(uintptr(n), "mmkd")
	if f == nil {
		return
	}
	// mmkd waits for the verdict all the same: a lost word costs only time.
	_, _ = f.WriteString(structureWhole)
	f.Close()
}

// noRoom reports an error of the disk, not of the store: full, over
// quota or read-only.
func noRoom(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// childCrashed reports whether a check child's end is a crash of its
// own, which the store's damage explains: a fault or panic of the Go
// runtime (exit status 2 with its words in the output) or death by a
// fault signal. Any other end (out of memory, no thread, a kill from
// outside) says nothing of the store.
func childCrashed(exit *exec.ExitError, output string) bool {
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGABRT, syscall.SIGILL, syscall.SIGFPE:
			return true
		}
		return false
	}
	if exit.ExitCode() != 2 {
		return false
	}
	for _, w := range []string{"fatal error: fault", "unexpected fault address", "SIGSEGV", "SIGBUS", "panic:"} {
		if strings.Contains(output, w) {
			return true
		}
	}
	return false
}

// rewrite puts again, in b and the buckets in it, the first key of each
// leaf page with its value: the page, and the branch pages above it,
// are read into bbolt's nodes as a first write to any key of it would
// read them, and a damaged one panics here, in the child. Before, every
// key was put again, and a copy of every value made (a write that was
// committed needed them): most of the trial write's time (0.1 s of CPU
// at 30,000 jobs) went to putting keys whose nodes were read already.
// A key's page is where bbolt's memory map holds it (data, the map's
// address, and pageSize from DB.Info): the keys iteration yields lie in
// the pages they are read from, in order. It returns how many keys it
// put. A leaf page that holds only nested buckets gets no put (a bucket's
// key cannot be put as a value); mmk's store has no nested bucket.
func rewrite(b *bolt.Bucket, data uintptr, pageSize int) (puts int, err error) {
	var first [][2][]byte // the first key and value of each page
	var nested [][]byte
	last := ^uintptr(0)
	err = b.ForEach(func(k, v []byte) error {
		if v == nil {
			nested = append(nested, k)
			return nil
		}
		// What Put refuses of any key, checked of every key (a key
		// too long for bbolt, in a damaged page, could not be set aside).
		if err := putWouldTake(k, v); err != nil {
			return fmt.Errorf("rewrite key %x: %w", k[:min(len(k), 32)], err)
		}
		if page := (uintptr(unsafe.Pointer(unsafe.SliceData(k))) - data) / uintptr(pageSize); page != last {
			first = append(first, [2][]byte{k, v})
			last = page
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// Rolled back (trialCheck): nothing the puts refer to is written,
	// and the map they point into stays where it is.
	for _, e := range first {
		if err := b.Put(e[0], e[1]); err != nil {
			return puts, fmt.Errorf("rewrite key %x: %w", e[0], err)
		}
		puts++
	}
	for _, k := range nested {
		c := b.Bucket(k)
		if c == nil {
			return puts, fmt.Errorf("bucket %x: not a bucket", k)
		}
		n, err := rewrite(c, data, pageSize)
		if puts += n; err != nil {
			return puts, err
		}
	}
	return puts, nil
}

// putWouldTake is what bbolt's Bucket.Put refuses of a key and value
// before it looks at the bucket: an empty key, one longer than
// bolt.MaxKeySize and a value longer than bolt.MaxValueSize.
func putWouldTake(k, v []byte) error {
	switch {
	case len(k) == 0:
		return bolterrors.ErrKeyRequired
	case len(k) > bolt.MaxKeySize:
		return bolterrors.ErrKeyTooLarge
	case int64(len(v)) > bolt.MaxValueSize:
		return bolterrors.ErrValueTooLarge
	}
	return nil
}

// checkInChild copies the store open in db (path; this process holds
// its lock, so nobody writes it meanwhile) to a private file beside it,
// 0600, runs o.CheckCommand on the copy and removes the copy. Where the
// disk has no room for the copy (full, over quota, read-only), the copy
// is made in memory instead (a memfd the child reads as /dev/fd/3): a
// healthy store is never refused for lack of space (issue 54; before,
// mmkd did not start on a disk with less free space than its store). A
// child that finds damage, crashes, is killed or runs past its time
// makes ErrStoreDamaged; one that could not check makes another error.
func checkInChild(path string, o *OpenOptions) error {
	verdict, err := startCheckInChild(path, o)
	if err != nil {
		return err
	}
	return verdict()
}

// startCheckInChild is checkInChild returning once the child has checked
// the store's structure (bbolt's check: the pages may be read), so that
// the store's records are read while the child makes its trial write;
// verdict waits for the child's end and says what checkInChild would.
// A child that ends before it says the structure is whole (a failure,
// or a check command that never says it) is waited for here.
func startCheckInChild(path string, o *OpenOptions) (verdict func() error, err error) {
	// Copies left by a check that mmkd's death cut short (the store's
	// lock is held: no other check runs).
	stale, _ := filepath.Glob(path + ".check-*")
	for _, f := range stale {
		os.Remove(f)
	}
	copyPath, extra, cleanup, err := copyForCheck(path, o)
	if err != nil {
		return nil, fmt.Errorf("job store %s: a copy to check: %w", path, err)
	}
	whole := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		err := runCheckChild(path, copyPath, extra, o, func() { once.Do(func() { close(whole) }) })
		// The copy goes before the verdict is said: whoever has the
		// verdict finds no copy left (a deferred removal ran after the
		// send, and a caller could see the copy; CI saw it once).
		cleanup()
		done <- err
	}()
	select {
	case <-whole:
		return sync.OnceValue(func() error { return <-done }), nil
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return func() error { return nil }, nil
	}
}

// checkFDEnv names the child's descriptor on which it says that the
// store's structure is whole (structureWhole), before its trial write.
const checkFDEnv = "MMK_STORE_CHECK_FD"

// structureWhole is what the child writes on that descriptor.
const structureWhole = "structure whole\n"

// runCheckChild runs the check child on copyPath (its extra files
// passed on) and says what its end means for the store at path; whole
// is called when the child says the structure is whole.
func runCheckChild(path, copyPath string, extra []*os.File, o *OpenOptions, whole func()) error {
	timeout := o.CheckTimeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	var out headBuffer
	var exit *exec.ExitError
	var err error
	timedOut := false
	for try := 0; ; try++ {
		timedOut, err = runCheckOnce(copyPath, extra, o, timeout, &out, whole)
		// Killed by a signal from outside (the OOM killer, a stop of the
		// host) proves nothing of the store: once more, then give up
		// without touching it. A fault of the Go runtime exits 2.
		if !timedOut && errors.As(err, &exit) && exit.ExitCode() == -1 && !childCrashed(exit, out.summary()) {
			if try == 0 {
				continue
			}
			return fmt.Errorf("job store %s: its check (%s) was killed twice (%v), which says nothing of the store: start mmkd again, or run `mmkd check-store` on a copy", path, o.CheckCommand[0], err)
		}
		break
	}
	switch {
	case err == nil:
		return nil
	case timedOut:
		// Slow storage or a busy start, as likely as damage (the check
		// stops at its first errors): no verdict, the store is kept.
		return fmt.Errorf("job store %s: its check (%s) ran past %v, which says nothing of the store: start mmkd again, or run `mmkd check-store` on a copy", path, o.CheckCommand[0], timeout)
	case errors.As(err, &exit) && exit.ExitCode() == checkCouldNot:
		return fmt.Errorf("job store %s: its check (%s) could not run: %s", path, o.CheckCommand[0], out.summary())
	case errors.As(err, &exit) && exit.ExitCode() == checkDamaged, errors.As(err, &exit) && childCrashed(exit, out.summary()):
		return fmt.Errorf("job store %s: %w: its check (a child process, %s): %v: %s", path, ErrStoreDamaged, o.CheckCommand[0], err, out.summary())
	case errors.As(err, &exit):
		return fmt.Errorf("job store %s: its check (%s) ended %v, which says nothing of the store: %s", path, o.CheckCommand[0], err, out.summary())
	}
	return fmt.Errorf("job store %s: its check: %w", path, err)
}

// runCheckOnce runs the check child once, its output into out, whole
// called when it says the structure is whole (a pipe it gets as the
// descriptor checkFDEnv names); timedOut is a child killed at timeout.
func runCheckOnce(copyPath string, extra []*os.File, o *OpenOptions, timeout time.Duration, out *headBuffer, whole func()) (timedOut bool, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return false, fmt.Errorf("a pipe for the check: %w", err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.CheckCommand[0], append(o.CheckCommand[1:len(o.CheckCommand):len(o.CheckCommand)], copyPath)...)
	cmd.ExtraFiles = append(slices.Clip(extra), w)
	// GOTRACEBACK=single: a fault ends the child with status 2, not
	// SIGABRT; the child dies with mmkd (no orphan left checking).
	cmd.Env = append(append(os.Environ(), "GOTRACEBACK=single", fmt.Sprintf("%s=%d", checkFDEnv, 2+len(cmd.ExtraFiles))), o.CheckEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// A child's own children may hold its output open past its end.
	cmd.WaitDelay = time.Second
	*out = headBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Start()
	w.Close()
	if err != nil {
		return false, err
	}
	said := make(chan struct{})
	go func() {
		defer close(said)
		b := make([]byte, len(structureWhole))
		if _, err := io.ReadFull(r, b); err == nil && string(b) == structureWhole {
			whole()
		}
	}()
	err = cmd.Wait()
	// The child's own children may hold the pipe open past its end.
	r.Close()
	<-said
	return errors.Is(ctx.Err(), context.DeadlineExceeded), err
}

// copyForCheck copies the store at path for a check child: to a file
// beside it, or, where the disk has no room for that, to a memfd, which
// the child gets as its descriptor 3 (extra) and opens as /dev/fd/3.
// cleanup removes the copy.
func copyForCheck(path string, o *OpenOptions) (copyPath string, extra []*os.File, cleanup func(), err error) {
	copyTo := o.copyStore
	if copyTo == nil {
		copyTo = copyFile
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".check-*")
	if err == nil {
		err = copyTo(tmp, path)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			return tmp.Name(), nil, func() { os.Remove(tmp.Name()) }, nil
		}
		os.Remove(tmp.Name())
	}
	if !noRoom(err) {
		return "", nil, nil, err
	}
	fd, merr := unix.MemfdCreate("mmk-store-check", unix.MFD_CLOEXEC)
	if merr != nil {
		return "", nil, nil, fmt.Errorf("%w; in memory: %w", err, merr)
	}
	mem := os.NewFile(uintptr(fd), "memfd:mmk-store-check")
	if merr := copyFile(mem, path); merr != nil {
		mem.Close()
		return "", nil, nil, fmt.Errorf("%w; in memory: %w", err, merr)
	}
	return "/dev/fd/3", []*os.File{mem}, func() { mem.Close() }, nil
}

// copyFile copies the file at path into dst.
func copyFile(dst *os.File, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(dst, src)
	return err
}

// headBuffer keeps the first bytes a child writes, which say why it
// failed (a crash's first lines name the fault).
type headBuffer struct{ b []byte }

// maxChildOutput bounds what headBuffer keeps.
const maxChildOutput = 4096

func (t *headBuffer) Write(p []byte) (int, error) {
	if room := maxChildOutput - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// summary is the child's first lines, joined.
func (t *headBuffer) summary() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, " | ")
}
