package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/internal/atomicfile"
)

// Shim timings.
const (
	// drainTimeout bounds how long the shim reads the output pipe after the
	// child's group ended: a process that left the group (setsid) may hold
	// it open for ever.
	drainTimeout = 2 * time.Second
	// shimDefaultGrace is the grace period of a stop request whose record
	// cannot be read.
	shimDefaultGrace = 10 * time.Second
	// defaultJobPath is the PATH a program name is looked up in when the
	// job's environment has none.
	defaultJobPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// ShimMain is the main of a job's supervisor, run as "mmkd shim JOB_DIR":
// args are the arguments after "shim", the job directory's absolute path.
//
// It reads and removes the directory's launch file, starts the program in
// its own process group with the launch's argv, environment and working
// directory, records the child's identity (pid record), copies its stdout
// and stderr into the job's log (one pipe for both, so they interleave as
// they arrive; rotated at the cap), waits for it and records how it ended
// (exit record). Records are written atomically. A program that cannot be
// started is recorded as an exit with Error set. On SIGUSR1 it reads the
// stop record and sends SIGTERM to the group, then SIGKILL when the grace
// period ends; SIGTERM, SIGINT and SIGHUP sent to the shim itself are
// logged and ignored. Descriptors the shim inherited above stderr are
// marked close-on-exec first: the job gets none of them. When the child ends, the shim kills what is left of
// its process group, so that no stray process keeps a GPU share.
//
// It returns the shim's exit status: 0 once the exit record is written, 1
// when it could not be, 2 on bad arguments. Messages go to stderr, which
// the Runner points at the job's shim.log.
func ShimMain(args []string) int {
	return shimMain(args, WriteRecordFile)
}

// shimMain is ShimMain writing its records with write (tests put a full
// disk there).
func shimMain(args []string, write func(path string, data []byte) error) int {
	// First of all, so that no signal the Runner sends finds the default
	// action. Handled signals (unlike ignored ones) are reset to their
	// default in the child at exec.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGUSR1)
	defer signal.Stop(sigs)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("shim", os.Getpid())
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintln(os.Stderr, "usage: mmkd shim JOB_DIR (an absolute path; mmkd runs this itself)")
		return 2
	}
	// No descriptor the shim inherited goes on to the job.
	if err := closeOnExec(); err != nil {
		log.Error("job did not start: inherited descriptors cannot be kept from it", "err", err)
		_ = os.Remove(filepath.Join(args[0], launchFile)) // the job's environment
		_ = writeRecord(args[0], exitFile, exitRecord{Version: recordVersion, Exit: Exit{Code: -1, At: time.Now(), Error: err.Error()}})
		return 1
	}
	s := &shim{dir: args[0], log: log, sigs: sigs, write: write}
	s.reserveExit()
	exit, err := s.run()
	if err != nil {
		log.Error("job did not start", "err", err)
		exit = Exit{Code: -1, At: time.Now(), Error: err.Error()}
	}
	return s.recordExit(exit)
}

// Exit records on a full disk. The shim sets aside the space of its exit
// record when it starts (exitReserve, exitReserveBytes of blanks, synced):
// should the disk be full when the job ends, so that no new file can be
// written, the record is written over the blanks, which needs no new
// block, and the file renamed into place. Before this (issue 38, row 6) a
// job that ended normally on a full disk was "supervisor lost".
const (
	exitReserveBytes = 4096
	// exitRetries and exitRetryEvery bound how long a shim that can
	// write its exit record nowhere tries again before it gives up (the
	// job is then "supervisor lost"); meanwhile mmkd sees it run.
	exitRetries    = 30
	exitRetryEvery = 2 * time.Second
)

// reserveExit sets aside the exit record's space.
func (s *shim) reserveExit() {
	path := filepath.Join(s.dir, exitReserve)
	blank := append(bytes.Repeat([]byte{' '}, exitReserveBytes-1), '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(blank)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Warn("cannot set aside the exit record's space; on a full disk the exit may go unrecorded", "err", err)
		_ = os.Remove(path)
	}
}

// recordExit writes the exit record, over the space set aside when a new
// file cannot be written, trying again for a while when neither can. It
// returns the shim's exit status.
func (s *shim) recordExit(exit Exit) int {
	rec := exitRecord{Version: recordVersion, Exit: exit}
	for try := 0; ; try++ {
		err := writeRecordWith(s.write, s.dir, exitFile, rec)
		if err == nil {
			_ = os.Remove(filepath.Join(s.dir, exitReserve))
			return 0
		}
		rerr := s.writeReserved(rec)
		if rerr == nil {
			s.log.Warn("exit recorded in the space set aside for it", "exit", exit, "err", err)
			return 0
		}
		if try+1 >= exitRetries {
			s.log.Error("cannot record the exit", "exit", exit, "err", err, "reserve", rerr)
			return 1
		}
		s.log.Error("cannot record the exit; trying again", "exit", exit, "err", err, "reserve", rerr, "in", exitRetryEvery)
		time.Sleep(exitRetryEvery)
	}
}

// writeReserved writes rec over the blanks of the reserved file, syncs
// it and renames it to the exit record. A record longer than the space
// has its Error cut.
func (s *shim) writeReserved(rec exitRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode %s: %w", exitFile, err)
	}
	if len(data) >= exitReserveBytes {
		rec.Error = rec.Error[:min(len(rec.Error), exitReserveBytes/2)] + " (cut)"
		if data, err = json.Marshal(rec); err != nil || len(data) >= exitReserveBytes {
			return fmt.Errorf("exit record of %d bytes: larger than its reserved space", len(data))
		}
	}
	path := filepath.Join(s.dir, exitReserve)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("reserved exit record: %w", err)
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reserved exit record: %w", err)
	}
	if err := os.Rename(path, filepath.Join(s.dir, exitFile)); err != nil {
		return fmt.Errorf("reserved exit record: %w", err)
	}
	return atomicfile.SyncDir(s.dir)
}

type shim struct {
	dir   string
	log   *slog.Logger
	sigs  chan os.Signal
	write func(path string, data []byte) error
	// grace is the launch's StopGrace: a stop's grace when its record
	// cannot be read.
	grace time.Duration
}

// run starts the child and supervises it until it ends. An error means
// the child did not run (or was killed at once because its pid could not
// be recorded).
func (s *shim) run() (Exit, error) {
	l, found, err := readRecord(s.dir, launchFile, parseLaunch)
	if err == nil && !found {
		err = errors.New("no launch record")
	}
	if err != nil {
		return Exit{}, err
	}
	if err := os.Remove(filepath.Join(s.dir, launchFile)); err != nil {
		s.log.Warn("cannot remove the launch record", "err", err)
	}
	s.grace = l.StopGrace
	lw, err := openLog(filepath.Join(s.dir, logFile), l.LogMaxBytes)
	if err != nil {
		return Exit{}, err
	}
	defer lw.Close()
	// Checked here because a failed chdir in the child reads as a missing
	// program ("fork/exec /usr/bin/true: no such file or directory").
	if st, err := os.Stat(l.Dir); err != nil {
		return Exit{}, fmt.Errorf("working directory: %w", err)
	} else if !st.IsDir() {
		return Exit{}, fmt.Errorf("working directory %s is not a directory", l.Dir)
	}
	path, err := lookPath(l.Argv[0], l.Env, l.Dir)
	if err != nil {
		return Exit{}, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Exit{}, fmt.Errorf("output pipe: %w", err)
	}
	defer pr.Close()
	cg := s.cgroup()
	if cg != nil {
		defer cg.close()
	}
	cmd, err := s.start(l, path, pw, cg)
	if err != nil && cg != nil {
		// A kernel without CLONE_INTO_CGROUP (before 5.7): the job runs
		// in its process group only.
		s.log.Warn("cannot start the job in its cgroup; starting it without", "cgroup", cg.dir, "err", err)
		s.removeCgroup(cg)
		cg = nil
		cmd, err = s.start(l, path, pw, nil)
	}
	pw.Close()
	if err != nil {
		return Exit{}, fmt.Errorf("start %s: %w", l.Argv[0], err)
	}
	leader, err := s.recordPID(cmd.Process.Pid, cg)
	if err != nil {
		// mmkd could not find the job again: do not leave it running.
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		s.removeCgroup(cg)
		_, _ = cmd.Process.Wait()
		return Exit{}, err
	}
	copied := make(chan struct{})
	go s.copyOutput(pr, lw, copied)
	exit, err := s.supervise(cmd, leader, cg)
	select {
	case <-copied:
	case <-time.After(drainTimeout):
		s.log.Warn("output pipe still open after the job ended; closing it", "after", drainTimeout)
	}
	pr.Close()
	<-copied
	if err != nil {
		// The child ran; what failed is the shim's own wait. Record it.
		s.log.Error("wait", "err", err)
		return Exit{Code: -1, At: time.Now(), Error: err.Error()}, nil
	}
	return exit, nil
}

// start starts the job's process: in its own process group, as the
// launch's user, in cg when set.
func (s *shim) start(l launchRecord, path string, out *os.File, cg *jobCgroup) (*exec.Cmd, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Credential: l.User.credential()}
	if cg != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, cg.fd
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        l.Argv,
		Env:         l.Env,
		Dir:         l.Dir,
		Stdout:      out,
		Stderr:      out,
		SysProcAttr: attr,
	}
	return cmd, cmd.Start()
}

// cgroup makes the job's cgroup, or returns nil where cgroup v2 cannot
// be used (the job then runs in its process group only).
func (s *shim) cgroup() *jobCgroup {
	root, err := cgroupRoot()
	if err != nil {
		s.log.Debug("no cgroup for the job", "err", err)
		return nil
	}
	cg, err := newJobCgroup(root, filepath.Base(s.dir))
	if err != nil {
		s.log.Warn("no cgroup for the job", "err", err)
		return nil
	}
	return cg
}

// removeCgroup kills what is left in the job's cgroup and removes it.
func (s *shim) removeCgroup(cg *jobCgroup) {
	if cg == nil {
		return
	}
	if err := killCgroup(cg.dir); err != nil {
		s.log.Warn("cannot empty the job's cgroup", "err", err)
	}
}

// recordPID writes the pid record: the child's identity, the shim's and
// the job's cgroup.
func (s *shim) recordPID(pid int, cg *jobCgroup) (procIdent, error) {
	child, err := identify(pid)
	if err != nil {
		return procIdent{}, fmt.Errorf("record pid: %w", err)
	}
	self, err := identify(os.Getpid())
	if err != nil {
		return procIdent{}, fmt.Errorf("record pid: %w", err)
	}
	rec := pidRecord{Version: recordVersion, Child: child, Shim: self, StartedAt: time.Now()}
	if cg != nil {
		rec.Cgroup = cg.dir
	}
	if err := writeRecordWith(s.write, s.dir, pidFile, rec); err != nil {
		return procIdent{}, fmt.Errorf("record pid: %w", err)
	}
	return child, nil
}

// copyOutput copies the pipe into the log until the pipe is closed. It
// keeps reading after a write error (a full disk), dropping the output,
// so that the job never blocks on a full pipe.
func (s *shim) copyOutput(pr *os.File, lw *logWriter, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	failed := false
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			if _, werr := lw.Write(buf[:n]); werr != nil && !failed {
				s.log.Error("job output is being dropped", "err", werr)
				failed = true
			}
		}
		if err != nil {
			return
		}
	}
}

// supervise waits for the child to end, handling signals meanwhile, then
// kills what is left of its group and of its cgroup, and reaps it.
func (s *shim) supervise(cmd *exec.Cmd, leader procIdent, cg *jobCgroup) (Exit, error) {
	pid := cmd.Process.Pid
	// Wait without reaping: while the leader is a zombie its pid, the
	// group's id, cannot be reused, so the group signals below cannot
	// reach another group.
	ended := make(chan error, 1)
	go func() {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				ended <- err
				return
			}
		}
	}()
	var (
		killTimer *time.Timer
		killAt    time.Time
		killC     <-chan time.Time
		termSent  bool
	)
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	for {
		select {
		case err := <-ended:
			if err != nil {
				return Exit{}, fmt.Errorf("wait for process %d: %w", pid, err)
			}
			if err := unix.Kill(-pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				s.log.Warn("cannot kill what is left of the process group", "pgid", pid, "err", err)
			}
			// Processes that left the group (setsid) are still in the
			// cgroup.
			s.removeCgroup(cg)
			state, err := cmd.Process.Wait()
			if err != nil {
				return Exit{}, fmt.Errorf("reap process %d: %w", pid, err)
			}
			e := exitOf(state)
			e.Stopped = termSent
			return e, nil
		case sig := <-s.sigs:
			if sig != unix.SIGUSR1 {
				s.log.Info("ignoring signal", "signal", signalName(sig))
				continue
			}
			grace := s.stopGrace()
			if !termSent {
				s.log.Info("stopping the job", "grace", grace)
				if err := unix.Kill(-pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
					s.log.Warn("SIGTERM to the process group", "err", err)
				}
				termSent = true
			}
			if at := time.Now().Add(grace); killTimer == nil || at.Before(killAt) {
				if killTimer != nil {
					killTimer.Stop()
				}
				killAt, killTimer = at, time.NewTimer(grace)
				killC = killTimer.C
			}
		case <-killC:
			s.log.Info("grace period over: SIGKILL to the process group")
			if err := unix.Kill(-pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				s.log.Warn("SIGKILL to the process group", "err", err)
			}
			killC = nil
		}
	}
}

// stopGrace reads the stop record's grace period.
func (s *shim) stopGrace() time.Duration {
	rec, found, err := readRecord(s.dir, stopFile, parseStopRecord)
	if err != nil || !found {
		grace := s.grace
		if grace <= 0 {
			grace = shimDefaultGrace
		}
		s.log.Warn("stop requested without a readable stop record (a full disk?); using the launch's grace", "grace", grace, "err", err)
		return grace
	}
	return rec.Grace
}

func signalName(sig os.Signal) string {
	if n, ok := sig.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return sig.String()
}

// exitOf turns a wait status into an Exit.
func exitOf(state *os.ProcessState) Exit {
	e := Exit{Code: state.ExitCode(), At: time.Now()}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Code = -1
		e.Signal = signalName(ws.Signal())
	}
	return e
}

// lookPath finds the program as execvp would with the job's PATH (not the
// shim's). A name with a slash is used as it is: a relative one is
// resolved against the working directory once the child is in it.
func lookPath(file string, env []string, dir string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathEnv, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathEnv, ok = v, true // the last one wins, as in os/exec
		}
	}
	if !ok {
		pathEnv = defaultJobPath
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, file)
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("look up %q: %w", file, err)
		}
	}
	return "", fmt.Errorf("%q: executable file not found in the job's PATH", file)
}
