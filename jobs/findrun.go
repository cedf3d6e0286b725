package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Finding a run whose pid record is lost. pid.json is how mmkd finds a
// job's shim and process; should it go (deleted by hand or by a cleaner,
// lost to a damaged disk) while the job runs, the job must not be taken
// for one that never started or whose shim is gone: that marked it
// failed while it ran on, out of mmkd's reach (issue 38, row 5). The run
// is found as mmkd started it instead: its shim is the process of mmkd's
// user whose arguments are the Runner's shim arguments and the job's
// directory, the job's process is the shim's child (the leader of its
// process group), and the job's cgroup is that process's. A run found
// whole gets its pid record back.

// readPid reads the job's pid record or, when there is none, finds the
// run it stood for (findRun). found is false when the job has no record
// and no shim runs its process; the record then has the shim's identity
// where a shim runs for the job without a process (it is starting it, or
// recording its end), else none. A job without record or shim whose
// cgroup still holds processes is killed there, and the error wraps
// ErrSupervisorLost.
func (r *Runner) readPid(jobID string) (pidRecord, bool, error) {
	dir := r.Dir(jobID)
	rec, found, err := readRecord(dir, pidFile, parsePidRecord)
	if err != nil || found {
		return rec, found, err
	}
	if _, err := os.Stat(filepath.Join(dir, shimLogFile)); err != nil {
		// No shim was ever started for the job (Start creates its log
		// first): nothing to look for.
		return pidRecord{}, false, nil
	}
	rec, found, err = r.findRun(jobID)
	if err != nil || found || rec.Shim.PID != 0 {
		return rec, found, err
	}
	return pidRecord{}, false, r.killStrayCgroup(jobID)
}

// findRun looks in /proc for the shim of the job, its child and the
// child's cgroup. found is false unless both run; the record of a shim
// whose child is not found (it is starting the job, or recording its
// end) has the shim's identity and a zero Child. A record found whole is
// written as the job's pid record again.
func (r *Runner) findRun(jobID string) (pidRecord, bool, error) {
	dir := r.Dir(jobID)
	want := append(slices.Clone(r.o.ShimArgs), dir)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return pidRecord{}, false, fmt.Errorf("find the run of job %s: %w", jobID, err)
	}
	self := uint32(os.Geteuid())
	shim, child := 0, 0
	parents := map[int]procStat{} // every process by pid, for the child
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // gone meanwhile, or unreadable
		}
		parents[pid] = st
		if shim != 0 || st.ended() {
			continue // a shim that ended, or is ending (killed), is none to find
		}
		if fi, err := os.Stat("/proc/" + e.Name()); err != nil || fi.Sys().(*syscall.Stat_t).Uid != self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := bytes.Split(bytes.TrimSuffix(cmdline, []byte{0}), []byte{0})
		if len(argv) == len(want)+1 && slices.EqualFunc(argv[1:], want, func(a []byte, b string) bool { return string(a) == b }) {
			shim = pid
		}
	}
	if shim == 0 {
		return pidRecord{}, false, nil
	}
	for pid, st := range parents {
		if st.PPID == shim && st.PGID == pid && !st.dead() {
			child = pid
		}
	}
	rec := pidRecord{Version: recordVersion}
	if rec.Shim, err = identify(shim); err != nil {
		if errors.Is(err, errNoProcess) {
			return pidRecord{}, false, nil
		}
		return pidRecord{}, false, fmt.Errorf("find the run of job %s: %w", jobID, err)
	}
	if child == 0 {
		return rec, false, nil
	}
	if rec.Child, err = identify(child); err != nil {
		return rec, false, nil // ended meanwhile: the shim records it
	}
	rec.StartedAt = startTime(rec.Child.StartTicks)
	if p, err := cgroupV2Path(strconv.Itoa(child)); err == nil {
		if mount, err := cgroup2Mount(); err == nil {
			if cg := filepath.Join(mount, p); cgroupDirOK(cg, jobID) {
				rec.Cgroup = cg
			}
		}
	}
	if err := writeRecord(dir, pidFile, rec); err != nil {
		r.log.Warn("job's pid record is lost and cannot be written again", "job", jobID, "err", err)
	}
	r.log.Warn("job's pid record was lost; found the job by its shim", "job", jobID, "pid", child, "shim", shim, "cgroup", rec.Cgroup)
	return rec, true, nil
}

// killStrayCgroup kills the processes left in the job's cgroup (below
// this process's own, where the shims make them) when nothing else says
// the job runs: no pid record, no shim. It returns an error wrapping
// ErrSupervisorLost when there were any, nil when there is no such
// cgroup or no cgroup v2.
func (r *Runner) killStrayCgroup(jobID string) error {
	root, err := cgroupRoot()
	if err != nil {
		return nil
	}
	cg := filepath.Join(root, cgroupPrefix+jobID)
	procs, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup of job %s: %w", jobID, err)
	}
	if len(bytes.TrimSpace(procs)) == 0 {
		_ = syscall.Rmdir(cg)
		return nil
	}
	if err := killCgroup(cg); err != nil {
		r.log.Warn("cannot kill a job left without its shim and records", "job", jobID, "cgroup", cg, "err", err)
	}
	r.log.Warn("job's shim and pid record are gone; killed what was left in its cgroup", "job", jobID, "cgroup", cg)
	return fmt.Errorf("%w: job %s has no pid record and no shim; its cgroup %s held processes, now killed", ErrSupervisorLost, jobID, cg)
}

// startTime is when a process that started ticks clock ticks after boot
// started (USER_HZ is 100 on Linux); the time now where the boot time
// cannot be read.
func startTime(ticks uint64) time.Time {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Now()
	}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			if boot, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				return time.Unix(boot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond)
			}
		}
	}
	return time.Now()
}
