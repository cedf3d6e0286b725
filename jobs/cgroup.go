package jobs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A job's cgroup. Where cgroup v2 is mounted and writable (mmkd as root,
// or a delegated subtree), the shim starts each job in a cgroup of its
// own, "mmk-job-<id>" below the shim's own cgroup, entered at
// clone (CLONE_INTO_CGROUP) so that no process of the job ever runs
// outside it. When the job's first process ends, the shim kills the
// whole cgroup (cgroup.kill, or SIGKILL to each member where the kernel
// lacks it), so that a process that left the job's process group
// (setsid, a daemonized worker) cannot outlive the job and keep its GPU
// memory. Without cgroup v2 the job runs in its process group only, as
// before, and such a process survives: docs/security.md says so.

// cgroupPrefix starts the name of a job's cgroup.
const cgroupPrefix = "mmk-job-"

// cgroupKillWait bounds how long the shim waits for a killed cgroup to
// empty before it gives up removing it.
const cgroupKillWait = 5 * time.Second

// cgroupRoot is where the shim makes job cgroups: the cgroup v2 mount's
// path of the calling process's own cgroup. It fails where cgroup v2 is
// not mounted or not writable.
func cgroupRoot() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(mount, own)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return "", fmt.Errorf("cgroup %s is not writable: %w", dir, err)
	}
	return dir, nil
}

// cgroup2Mount is the mount point of the cgroup v2 hierarchy
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 0:30 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fields := strings.Fields(post); len(fields) == 0 || fields[0] != "cgroup2" {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 && fields[3] == "/" {
			return unescapeMount(fields[4]), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cgroup v2: mountinfo: %w", err)
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is the calling process's cgroup v2 path ("0::/path" in
// /proc/self/cgroup).
func ownCgroup() (string, error) {
	p, err := cgroupV2Path("self")
	if err != nil {
		return "", fmt.Errorf("own cgroup: %w", err)
	}
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return "", fmt.Errorf("own cgroup: odd path %q", p)
	}
	return p, nil
}

// cgroupV2Path is the cgroup v2 path of process pid ("self" for the
// calling process), as its "0::/path" line in /proc/PID/cgroup has it,
// unchecked. Its errors name the file.
func cgroupV2Path(pid string) (string, error) {
	file := filepath.Join("/proc", pid, "cgroup")
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 entry in %s", file)
}

// jobCgroup is a job's cgroup directory, open for CLONE_INTO_CGROUP.
type jobCgroup struct {
	dir string
	fd  int
}

// newJobCgroup makes the job's cgroup below root (an earlier one of the
// same name, left by a shim that died, is killed and replaced).
func newJobCgroup(root, jobID string) (*jobCgroup, error) {
	dir := filepath.Join(root, cgroupPrefix+jobID)
	if err := os.Mkdir(dir, 0o755); errors.Is(err, fs.ErrExist) {
		if err := killCgroup(dir); err != nil {
			return nil, fmt.Errorf("earlier cgroup of the job: %w", err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("job cgroup: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	return &jobCgroup{dir: dir, fd: fd}, nil
}

// close releases the directory descriptor (the cgroup stays).
func (c *jobCgroup) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// killCgroup kills every process of a job's cgroup and removes it,
// waiting at most cgroupKillWait for it to empty. A cgroup that is gone
// already is not an error.
func killCgroup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	useKill := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(cgroupKillWait)
	for {
		if !useKill {
			// A kernel before 5.14: signal each member until none is left.
			if err := signalMembers(dir, unix.SIGKILL); err != nil {
				return err
			}
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still holds processes %v after SIGKILL", dir, cgroupKillWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// signalMembers sends sig to every process in the cgroup.
func signalMembers(dir string, sig unix.Signal) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("members of cgroup %s: %w", dir, err)
	}
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("signal %d in cgroup %s: %w", pid, dir, err)
			}
		}
	}
	return nil
}

// cgroupDirOK reports whether a recorded cgroup path names a job's cgroup
// (a record is a file on disk: it must not make the Runner kill another
// cgroup).
func cgroupDirOK(dir, jobID string) bool {
	return dir != "" && filepath.IsAbs(dir) && filepath.Base(dir) == cgroupPrefix+jobID && filepath.Clean(dir) == dir
}

// killRest kills what is left of a run whose shim is gone: the process
// group its leader led (while the leader exists) and its cgroup.
func (rec pidRecord) killRest(jobID string) (bool, error) {
	killed, err := rec.Child.signalGroup(unix.SIGKILL)
	if cgroupDirOK(rec.Cgroup, jobID) {
		if cerr := killCgroup(rec.Cgroup); cerr != nil && err == nil {
			err = cerr
		}
	}
	return killed, err
}

// JobOfProcess names the job whose cgroup the process pid is in ("" when
// it is in none of a job's: no cgroup v2, or not a job's process). A
// process that left its job's process group (setsid) is still in its
// cgroup, and cannot leave it.
func JobOfProcess(pid int) string {
	p, err := cgroupV2Path(strconv.Itoa(pid))
	if err != nil {
		return ""
	}
	if id, ok := strings.CutPrefix(filepath.Base(p), cgroupPrefix); ok && ValidID(id) {
		return id
	}
	return ""
}
