package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/kernelsched"
)

// ProfileOptions set a profiling phase (the hook's MMK_PROFILE_*).
type ProfileOptions struct {
	// Runs is how many runs the phase measures after Skip warm-up runs.
	Runs, Skip int
	// RunGap is the pause in launch calls that ends a run.
	RunGap time.Duration
	// Max ends the phase even if runs are missing.
	Max time.Duration
	// Owner, if set, is the user the job runs as, when it is not the
	// caller's: the hook, in the job, writes its trace into a directory
	// of theirs (TracesDir/TAG, 0700), which the caller reads, and the
	// caller stores the profile. Unset, the trace is written beside the
	// profile, in the profile directory.
	Owner *TraceOwner
}

// TraceOwner is the user and group a job's trace directory is given.
type TraceOwner struct{ UID, GID int }

// TracesDir is the directory of a profile directory that holds the
// trace directories of jobs that run as other users (ProfileOptions.Owner).
const TracesDir = "traces"

// maxTraceBytes caps the trace a job may make the caller read.
const maxTraceBytes = 1 << 30

// DefaultProfileOptions are mmkctl run's defaults and mmkd's.
func DefaultProfileOptions() ProfileOptions {
	return ProfileOptions{Runs: 50, Skip: 10, RunGap: time.Millisecond, Max: time.Minute}
}

func (o ProfileOptions) validate() error {
	switch {
	case o.Runs < 1:
		return fmt.Errorf("profile runs %d must be at least 1", o.Runs)
	case o.Skip < 0:
		return fmt.Errorf("profile skip %d must not be negative", o.Skip)
	case o.RunGap < time.Microsecond:
		return fmt.Errorf("profile run gap %v must be at least 1µs", o.RunGap)
	case o.Max < time.Second:
		return fmt.Errorf("profile max %v must be at least 1s", o.Max)
	}
	return nil
}

// ProfilePhase is one job's profiling phase: the hook measures its
// kernels for some runs and writes their trace to Trace; Collect turns
// the trace into the task's profile at Dest, in the profile directory the
// kernel scheduler reads (kernelsched.ProfilePath).
type ProfilePhase struct {
	Key, Dest, Trace string
	// traceDir is the job user's directory the trace is written into
	// (ProfileOptions.Owner), removed with the phase; empty: none.
	traceDir string
	owner    *TraceOwner
	done     bool
}

// NewProfilePhase prepares the profiling phase of task key in profile
// directory dir: the phase and the environment the hook needs. It returns
// a nil phase when the key has a profile there already. tag makes the
// trace file's name unique among concurrent phases (a pid, a job id).
func NewProfilePhase(dir, key, tag string, o ProfileOptions) (*ProfilePhase, []string, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("profile directory %s: not a directory", dir)
	}
	have, err := kernelsched.LoadProfileFor(dir, key)
	if err != nil {
		return nil, nil, fmt.Errorf("profile directory: %w", err)
	}
	if have != nil {
		return nil, nil, nil
	}
	dest, err := kernelsched.ProfilePath(dir, key)
	if err != nil {
		return nil, nil, fmt.Errorf("task key: %w", err)
	}
	p := &ProfilePhase{Key: key, Dest: dest, Trace: strings.TrimSuffix(dest, ".json") + "." + tag + ".trace.jsonl"}
	if o.Owner != nil {
		if err := p.makeTraceDir(dir, tag, *o.Owner); err != nil {
			return nil, nil, err
		}
	}
	env := []string{
		"MMK_PROFILE_OUT=" + p.Trace,
		"MMK_PROFILE_RUNS=" + strconv.Itoa(o.Runs),
		"MMK_PROFILE_SKIP=" + strconv.Itoa(o.Skip),
		"MMK_PROFILE_RUN_GAP_US=" + strconv.FormatInt(max(1, o.RunGap.Microseconds()), 10),
		"MMK_PROFILE_MAX_S=" + strconv.FormatInt(max(1, int64(o.Max.Seconds())), 10),
	}
	return p, env, nil
}

// makeTraceDir makes the directory the job's user writes the trace in:
// dir/TracesDir/tag, 0700, theirs (TracesDir itself is the caller's, and
// others may only pass through it).
func (p *ProfilePhase) makeTraceDir(dir, tag string, o TraceOwner) error {
	if strings.ContainsAny(tag, "/\x00") || tag == "" || tag == "." || tag == ".." {
		return fmt.Errorf("profile trace directory: tag %q is not a file name", tag)
	}
	traces := filepath.Join(dir, TracesDir)
	if err := os.Mkdir(traces, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("profile trace directory: %w", err)
	}
	td := filepath.Join(traces, tag)
	if err := os.RemoveAll(td); err != nil { // one a crash left
		return fmt.Errorf("profile trace directory: %w", err)
	}
	if err := os.Mkdir(td, 0o700); err != nil {
		return fmt.Errorf("profile trace directory: %w", err)
	}
	if err := os.Lchown(td, o.UID, o.GID); err != nil {
		_ = os.Remove(td)
		return fmt.Errorf("profile trace directory for uid %d: %w", o.UID, err)
	}
	p.traceDir, p.owner = td, &o
	p.Trace = filepath.Join(td, filepath.Base(p.Trace))
	return nil
}

// Close removes what the phase made for the job's user (its trace
// directory); the phase's profile stays.
func (p *ProfilePhase) Close() error {
	if p.traceDir == "" {
		return nil
	}
	if err := os.RemoveAll(p.traceDir); err != nil {
		return fmt.Errorf("profile trace directory: %w", err)
	}
	return nil
}

// openTrace opens the trace. In a directory of the job's user it must be
// a regular file of theirs, opened without following a link or waiting
// on a pipe: the user may have put anything there.
func (p *ProfilePhase) openTrace() (*os.File, error) {
	if p.owner == nil {
		return os.Open(p.Trace)
	}
	fd, err := unix.Open(p.Trace, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p.Trace, Err: err}
	}
	f := os.NewFile(uintptr(fd), p.Trace)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "stat", Path: p.Trace, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != p.owner.UID || st.Size > maxTraceBytes {
		f.Close()
		return nil, fmt.Errorf("trace %s: not a regular file of uid %d of at most %d bytes (mode %o, uid %d, %d bytes)",
			p.Trace, p.owner.UID, maxTraceBytes, st.Mode, st.Uid, st.Size)
	}
	return f, nil
}

// Done reports that the phase's trace was collected (or failed).
func (p *ProfilePhase) Done() bool { return p.done }

// Collect builds and saves the profile once the hook has written the
// trace. It returns nil and no error while the trace is not there yet; a
// trace that cannot be read ends the phase with the error.
func (p *ProfilePhase) Collect() (*kernelsched.TaskProfile, error) {
	if p.done {
		return nil, nil
	}
	f, err := p.openTrace()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	p.done = true
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	defer p.Close()
	defer os.Remove(p.Trace)
	defer f.Close()
	kt, err := ReadKernelTrace(p.Trace, io.LimitReader(f, maxTraceBytes))
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	prof, err := kt.HookProfile(p.Key)
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	// Atomically: the server may read the directory at any moment.
	var buf bytes.Buffer
	if err := kernelsched.WriteProfiles(&buf, []*kernelsched.TaskProfile{prof}); err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	if err := atomicfile.Write(p.Dest, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	return prof, nil
}
