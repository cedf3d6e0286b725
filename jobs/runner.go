package jobs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
)

// Runner defaults.
const (
	// DefaultLogMaxBytes caps each of a job's two log files.
	DefaultLogMaxBytes = 32 << 20
	// DefaultStopGrace is the time from SIGTERM to SIGKILL.
	DefaultStopGrace = 30 * time.Second
	// DefaultStartTimeout bounds Start's wait for the shim.
	DefaultStartTimeout = 10 * time.Second
)

// pollInterval is how often Start and Wait look at a job's records.
// Wait polls rather than waiting on a pidfd because it must also learn of
// the end of shims that are not mmkd's children (adopted after a restart)
// and of shims that died without a record; reading one small file and
// /proc/<pid>/stat a few times a second per job costs nothing next to a
// GPU job, works on any kernel, and needs no thread parked in poll(2).
// Jobs this Runner started wake Wait at once when their shim is reaped.
const (
	startPoll = 10 * time.Millisecond
	waitPoll  = 150 * time.Millisecond
)

// Errors of the Runner.
var (
	// ErrSupervisorLost is a job whose shim is gone without recording
	// how the job ended: the job is to be marked failed.
	ErrSupervisorLost = errors.New("supervisor lost")
	// ErrNotStarted is a job with neither a pid record nor an exit record.
	ErrNotStarted = errors.New("job was not started")
	// ErrRunning is a job whose shim still runs.
	ErrRunning = errors.New("job is running")
)

// StartError is a job whose program could not be started (no such
// program, a bad working directory); Reason is the shim's message.
type StartError struct {
	JobID  string
	Reason string
}

// Error says which job did not start and why.
func (e *StartError) Error() string {
	return fmt.Sprintf("job %s did not start: %s", e.JobID, e.Reason)
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Root holds one directory per job (created 0700 if missing).
	Root string
	// ShimPath is the executable each job's supervisor runs and ShimArgs
	// its leading arguments; the job directory follows them. In mmkd:
	// os.Executable() and ["shim"].
	ShimPath string
	ShimArgs []string
	// ShimEnv is added to mmkd's environment for the shim. The job's own
	// environment is Launch.Env, passed in the launch file.
	ShimEnv []string
	// LogMaxBytes caps each of a job's two log files; 0:
	// DefaultLogMaxBytes.
	LogMaxBytes int64
	// StopGrace is the time from SIGTERM to SIGKILL when Stop is given 0;
	// 0: DefaultStopGrace.
	StopGrace time.Duration
	// StartTimeout bounds Start's wait for the shim's first record; 0:
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// WriteRecord writes the records mmkd writes into a job's directory
	// while the job runs (stop.json) atomically; nil: WriteRecordFile.
	// Tests put a full disk here.
	WriteRecord func(path string, data []byte) error
}

// Runner starts jobs under their shims and finds them again after a
// restart of mmkd. It is safe for concurrent use; two Runners may share a
// root (an mmkd and its successor), though not start the same job.
//
// Checkpoint contract: a job moved by a reconfiguration gets SIGTERM (Stop);
// it should save a checkpoint into $MMK_CHECKPOINT_DIR (CheckpointDir,
// kept across restarts) and exit within the grace period. It is started
// again with MMK_RESTART_COUNT incremented and the same
// $MMK_CHECKPOINT_DIR, and should resume from it. The caller sets both
// variables in Launch.Env; docs/jobs.md has the whole contract.
type Runner struct {
	o   RunnerOptions
	log *slog.Logger

	mu sync.Mutex
	// reaped has, for each shim this Runner started and has not yet
	// reaped, a channel closed once it is.
	reaped map[string]chan struct{}
}

// NewRunner checks the options and creates the root directory.
func NewRunner(o RunnerOptions) (*Runner, error) {
	if o.Root == "" || o.ShimPath == "" {
		return nil, errors.New("runner: the root directory and the shim executable are required")
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("runner: root: %w", err)
	}
	o.Root = root
	if strings.Contains(o.ShimPath, "/") {
		// The shim runs in the job's directory: a relative path would be
		// looked up there.
		if o.ShimPath, err = filepath.Abs(o.ShimPath); err != nil {
			return nil, fmt.Errorf("runner: shim: %w", err)
		}
	}
	if o.LogMaxBytes < 0 || o.StopGrace < 0 || o.StartTimeout < 0 {
		return nil, errors.New("runner: the log cap, stop grace and start timeout may not be negative")
	}
	if o.LogMaxBytes == 0 {
		o.LogMaxBytes = DefaultLogMaxBytes
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.WriteRecord == nil {
		o.WriteRecord = WriteRecordFile
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return &Runner{o: o, log: o.Logger, reaped: make(map[string]chan struct{})}, nil
}

// Launch is what to run for a job.
type Launch struct {
	// JobID names the job's directory (jobs.ValidID).
	JobID string
	// Argv is the program and its arguments, never a shell string. A
	// program name without '/' is looked up in Env's PATH.
	Argv []string
	// Env is the job's whole environment, KEY=VALUE.
	Env []string
	// WorkDir is the working directory (absolute); "": the job's
	// directory, or its checkpoint directory for a job run as User.
	WorkDir string
	// User, if set, is the user the job runs as: the shim, which runs as
	// mmkd's user (root), starts the job with the user's ids and groups.
	// The job's directory is then traversable (0711) and its checkpoint
	// directory the user's; the other records stay mmkd's.
	User *User
	// Record, if set, is the job's record as mmkd keeps it (JSON): it is
	// written to the job's directory (job.json, 0600), so that the job
	// can be adopted should mmkd's store be lost (Runner.Record).
	Record []byte
}

// Proc is a running job's process.
type Proc struct {
	// PID is the job's process, which leads its process group.
	PID int
	// ShimPID is its supervisor's.
	ShimPID int
	// StartedAt is when the shim started it.
	StartedAt time.Time
}

// Dir is the job's directory; "" for a string that is not a job id, so
// that no id can name a path outside the root.
func (r *Runner) Dir(jobID string) string {
	if !ValidID(jobID) {
		return ""
	}
	return filepath.Join(r.o.Root, jobID)
}

// LogPath is the job's log file; the one before it is LogPath + ".1". ""
// for a string that is not a job id.
func (r *Runner) LogPath(jobID string) string {
	if !ValidID(jobID) {
		return ""
	}
	return filepath.Join(r.o.Root, jobID, logFile)
}

// CheckpointDir returns the job's $MMK_CHECKPOINT_DIR, creating it (0700)
// if needed, so that it can be put in the job's environment before Start.
// It is kept across restarts of the job, until Remove.
func (r *Runner) CheckpointDir(jobID string) (string, error) {
	if err := checkID("checkpoint directory", jobID); err != nil {
		return "", err
	}
	dir := filepath.Join(r.o.Root, jobID, checkpointDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("checkpoint directory of job %s: %w", jobID, err)
	}
	return dir, nil
}

func checkID(op, id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%s: %q is not a job id", op, id)
	}
	return nil
}

// Start starts a job under a new shim and returns once the shim reports
// that the job's process runs. A program that cannot be started is a
// *StartError, and the job's exit record holds the reason. A job whose
// shim still runs is refused (ErrRunning). The job's log is appended to,
// its checkpoint directory kept, its other records of an earlier run
// removed.
func (r *Runner) Start(l Launch) (Proc, error) {
	id := l.JobID
	if err := checkID("start", id); err != nil {
		return Proc{}, err
	}
	if len(l.Argv) == 0 || l.Argv[0] == "" {
		return Proc{}, fmt.Errorf("start job %s: no program", id)
	}
	dir := r.Dir(id)
	ckpt, err := r.CheckpointDir(id)
	if err != nil {
		return Proc{}, fmt.Errorf("start job %s: %w", id, err)
	}
	if l.User != nil {
		if err := shareWithUser(dir, ckpt, l.User); err != nil {
			return Proc{}, fmt.Errorf("start job %s: %w", id, err)
		}
	}
	if l.WorkDir == "" {
		l.WorkDir = dir
		if l.User != nil {
			l.WorkDir = ckpt
		}
	}
	if !filepath.IsAbs(l.WorkDir) {
		return Proc{}, fmt.Errorf("start job %s: working directory %q is not absolute", id, l.WorkDir)
	}
	if err := r.reset(id); err != nil {
		return Proc{}, fmt.Errorf("start job %s: %w", id, err)
	}
	if l.Record != nil {
		err := atomicfile.WriteFunc(filepath.Join(dir, jobFile), 0o600, func(w io.Writer) error {
			_, err := w.Write(l.Record)
			return err
		})
		if err != nil {
			return Proc{}, fmt.Errorf("start job %s: %w", id, err)
		}
	}
	launch := launchRecord{Version: recordVersion, Argv: l.Argv, Env: l.Env, Dir: l.WorkDir, LogMaxBytes: r.o.LogMaxBytes, User: l.User,
		StopGrace: r.o.StopGrace}
	if err := writeLaunch(dir, launch); err != nil {
		return Proc{}, fmt.Errorf("start job %s: %w", id, err)
	}
	shimLog, err := os.OpenFile(filepath.Join(dir, shimLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Proc{}, fmt.Errorf("start job %s: shim log: %w", id, err)
	}
	cmd := exec.Command(r.o.ShimPath, append(slices.Clone(r.o.ShimArgs), dir)...)
	cmd.Env = append(os.Environ(), r.o.ShimEnv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = shimLog, shimLog // stdin: /dev/null
	// Its own session: no signal to mmkd's process group or terminal
	// reaches it, and it outlives mmkd.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	shimLog.Close()
	if err != nil {
		return Proc{}, fmt.Errorf("start job %s: shim: %w", id, err)
	}
	reaped := make(chan struct{})
	r.mu.Lock()
	r.reaped[id] = reaped
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		if r.reaped[id] == reaped {
			delete(r.reaped, id)
		}
		r.mu.Unlock()
		close(reaped)
		r.log.Debug("shim ended", "job", id, "pid", cmd.Process.Pid, "status", err)
	}()
	p, err := r.awaitStart(id, reaped)
	if err != nil {
		var se *StartError
		if !errors.As(err, &se) {
			// Unknown state: do not leave a shim that may yet start the
			// job, nor a job it started but did not record in time.
			_ = cmd.Process.Kill()
			if rec, found, rerr := readRecord(dir, pidFile, parsePidRecord); rerr == nil && found {
				_, _ = rec.killRest(id)
			}
		}
		return Proc{}, err
	}
	r.log.Info("job started", "job", id, "pid", p.PID, "shim", p.ShimPID)
	return p, nil
}

// Reset clears the records of a job's earlier run (pid, exit and stop
// records; the log and the checkpoint stay), so that a job placed again
// is not taken, after a crash of mmkd before its new start, for the run
// before. A job whose shim still runs is refused (ErrRunning); what is
// left of an earlier run that lost its shim is killed. A job with no
// directory has nothing to clear.
func (r *Runner) Reset(jobID string) error {
	if err := checkID("reset", jobID); err != nil {
		return err
	}
	if _, err := os.Stat(r.Dir(jobID)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := r.reset(jobID); err != nil {
		return fmt.Errorf("reset job %s: %w", jobID, err)
	}
	return nil
}

func (r *Runner) reset(id string) error {
	dir := r.Dir(id)
	if _, ended, err := readRecord(dir, exitFile, parseExitRecord); err != nil {
		return err
	} else if !ended {
		if rec, found, err := r.readPid(id); err != nil && !errors.Is(err, ErrSupervisorLost) {
			return err
		} else if found {
			if up, err := rec.Shim.running(); err != nil {
				return err
			} else if up {
				return fmt.Errorf("shim %d: %w", rec.Shim.PID, ErrRunning)
			}
			// An earlier run lost its shim: do not let what is left of it
			// run beside the new one.
			if _, err := rec.killRest(id); err != nil {
				return fmt.Errorf("kill the earlier run: %w", err)
			}
		}
	}
	for _, name := range []string{pidFile, exitFile, stopFile, exitReserve} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// awaitStart waits for the shim's pid record (the child runs) or its exit
// record without a pid record (the child did not start).
func (r *Runner) awaitStart(id string, reaped <-chan struct{}) (Proc, error) {
	dir := r.Dir(id)
	deadline := time.NewTimer(r.o.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	shimGone := false
	for {
		// The shim writes the pid record before the exit record: look for
		// the exit first, so that a pid record looked for after it is seen.
		exit, ended, err := readRecord(dir, exitFile, parseExitRecord)
		if err != nil {
			return Proc{}, fmt.Errorf("start job %s: %w", id, err)
		}
		rec, found, err := readRecord(dir, pidFile, parsePidRecord)
		if err != nil {
			return Proc{}, fmt.Errorf("start job %s: %w", id, err)
		}
		switch {
		case found:
			return procOf(rec), nil
		case ended:
			return Proc{}, &StartError{JobID: id, Reason: exit.Error}
		case shimGone:
			return Proc{}, fmt.Errorf("start job %s: the shim exited without a record: %s", id, r.shimLogTail(id))
		}
		select {
		case <-reaped:
			shimGone = true // look once more
		case <-deadline.C:
			return Proc{}, fmt.Errorf("start job %s: the shim did not report within %v: %s", id, r.o.StartTimeout, r.shimLogTail(id))
		case <-tick.C:
		}
	}
}

// shimLogTail returns the end of the job's shim.log, for errors.
func (r *Runner) shimLogTail(id string) string {
	f, err := os.Open(filepath.Join(r.Dir(id), shimLogFile))
	if err != nil {
		return fmt.Sprintf("(no shim log: %v)", err)
	}
	defer f.Close()
	const tail = 1024
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return fmt.Sprintf("(shim log: %v)", err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, tail))
	if err != nil {
		return fmt.Sprintf("(shim log: %v)", err)
	}
	if len(data) == 0 {
		return "(the shim log is empty)"
	}
	return "shim log: " + strings.TrimSpace(string(data))
}
