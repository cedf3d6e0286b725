package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// freezeWait bounds how long Freeze waits for the kernel to say a job's
// cgroup is frozen (every process stopped, including those that left the
// job's process group).
const freezeWait = time.Second

// Freeze freezes (frozen) or thaws a running job's cgroup (cgroup v2's
// cgroup.freeze): every process of the job stops, also one that left its
// process group (setsid), which a signal to the group misses. ok is false
// where the job has no cgroup (no cgroup v2, or no record of its run):
// the caller signals its process group instead. A freeze returns once
// the kernel says the cgroup is frozen (cgroup.events), at most
// freezeWait.
func (r *Runner) Freeze(jobID string, frozen bool) (ok bool, err error) {
	if !ValidID(jobID) {
		return false, fmt.Errorf("freeze job %q: not a job id", jobID)
	}
	rec, found, err := readRecord(r.Dir(jobID), pidFile, parsePidRecord)
	if err != nil || !found || !cgroupDirOK(rec.Cgroup, jobID) {
		return false, err
	}
	return freezeCgroup(rec.Cgroup, frozen)
}

// freezeCgroup writes dir's cgroup.freeze and, freezing, waits for
// cgroup.events to say "frozen 1". ok is false where dir has no
// cgroup.freeze (gone, or a kernel before 5.2).
func freezeCgroup(dir string, frozen bool) (ok bool, err error) {
	v := []byte("0")
	if frozen {
		v = []byte("1")
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), v, 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("freeze cgroup %s: %w", dir, err)
	}
	if !frozen {
		return true, nil
	}
	for deadline := time.Now().Add(freezeWait); ; time.Sleep(time.Millisecond) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return true, fmt.Errorf("freeze cgroup %s: %w", dir, err)
		}
		if bytes.Contains(data, []byte("frozen 1")) {
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("freeze cgroup %s: not frozen after %v", dir, freezeWait)
		}
	}
}

// ProcessFrozen reports whether process pid is in a frozen cgroup of a
// job (cgroup.events says "frozen 1"): stopped by Freeze, whatever its
// state in /proc says (a frozen task reads as sleeping).
func ProcessFrozen(pid int) (bool, error) {
	p, err := cgroupV2Path(strconv.Itoa(pid))
	if err != nil {
		return false, err
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return false, err
	}
	data, err := os.ReadFile(filepath.Join(mount, filepath.Clean("/"+p), "cgroup.events"))
	if err != nil {
		return false, err
	}
	return bytes.Contains(data, []byte("frozen 1")), nil
}
