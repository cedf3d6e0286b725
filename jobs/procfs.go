package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// procStat is what mmk reads of /proc/<pid>/stat.
type procStat struct {
	State      byte   // R, S, D, Z (zombie), X (dead), ...
	PPID       int    // parent
	PGID       int    // process group
	Flags      uint64 // the kernel's PF_* flags
	StartTicks uint64 // start time in clock ticks after boot
}

// pfExiting is the kernel's PF_EXITING: the process is exiting (killed,
// say), its /proc entry still readable until it is a zombie.
const pfExiting = 0x4

// dead reports whether the process has ended: a zombie, or dead.
func (st procStat) dead() bool { return st.State == 'Z' || st.State == 'X' }

// ended reports whether the process has ended or is ending: exiting,
// a zombie or dead.
func (st procStat) ended() bool { return st.Flags&pfExiting != 0 || st.dead() }

// parseStat reads /proc/<pid>/stat: "pid (comm) state ppid pgrp ...",
// flags the 9th field, starttime the 22nd. comm may hold spaces and parentheses, so the
// fields are counted after its last ')'.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("proc stat: no ')' after the command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[2] field 5
	// (pgrp), f[6] field 9 (flags), f[19] field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("proc stat: %d fields after the command name, want at least 20", len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: parent: %w", err)
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: process group: %w", err)
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: flags: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: start time: %w", err)
	}
	return procStat{State: f[0][0], PPID: ppid, PGID: pgid, Flags: flags, StartTicks: start}, nil
}

// errNoProcess is a pid that names no process.
var errNoProcess = errors.New("no such process")

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || (err == nil && len(data) == 0) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return parseStat(data)
}

var bootID = sync.OnceValues(func() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
})

// identify returns the identity of a live (or zombie) process.
func identify(pid int) (procIdent, error) {
	boot, err := bootID()
	if err != nil {
		return procIdent{}, err
	}
	st, err := readStat(pid)
	if err != nil {
		return procIdent{}, fmt.Errorf("identify process %d: %w", pid, err)
	}
	return procIdent{PID: pid, StartTicks: st.StartTicks, BootID: boot}, nil
}

// procCheck is what became of an identified process.
type procCheck int

const (
	procGone    procCheck = iota // no process, or another one with its pid
	procZombie                   // ended, not yet reaped: its pid is not reused yet
	procRunning                  // still runs
)

// check looks the process up. A pid now held by another process (another
// start time, or a record from another boot) is procGone.
func (id procIdent) check() (procCheck, error) {
	boot, err := bootID()
	if err != nil {
		return procGone, err
	}
	if id.PID <= 0 || id.BootID != boot {
		return procGone, nil
	}
	st, err := readStat(id.PID)
	if errors.Is(err, errNoProcess) {
		return procGone, nil
	}
	if err != nil {
		return procGone, err
	}
	switch {
	case st.StartTicks != id.StartTicks:
		return procGone, nil
	case st.dead():
		return procZombie, nil
	}
	return procRunning, nil
}

// running reports whether the process still runs.
func (id procIdent) running() (bool, error) {
	c, err := id.check()
	return c == procRunning, err
}

// signal sends sig to the process if it is still the one identified and
// runs, and reports whether it did. It holds a pidfd while it checks, so
// the signal cannot reach a process that took the pid after the check;
// where pidfd_open is missing (Linux before 5.3, some seccomp filters) it
// falls back to kill(2) right after the check.
func (id procIdent) signal(sig unix.Signal) (bool, error) {
	fd, err := unix.PidfdOpen(id.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return false, nil
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		if ok, err := id.running(); !ok || err != nil {
			return false, err
		}
		if err := unix.Kill(id.PID, sig); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return false, nil
			}
			return false, fmt.Errorf("signal process %d: %w", id.PID, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("pidfd_open %d: %w", id.PID, err)
	}
	defer unix.Close(fd)
	if ok, err := id.running(); !ok || err != nil {
		return false, err
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signal process %d: %w", id.PID, err)
	}
	return true, nil
}

// signalGroup sends sig to the process group the identified process
// leads, if that process still exists (running or zombie): while it does,
// the group's id cannot name another group. Once the leader is reaped the
// group is left alone, since its number may have been reused.
func (id procIdent) signalGroup(sig unix.Signal) (bool, error) {
	c, err := id.check()
	if c == procGone || err != nil {
		return false, err
	}
	if err := unix.Kill(-id.PID, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signal process group %d: %w", id.PID, err)
	}
	return true, nil
}

// ProcessGroup returns the process group of a live process. The shim
// starts every job in a session of its own, so a process of a job (the
// job's process or one it started) is in the group whose id is the job's
// PID.
func ProcessGroup(pid int) (int, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, fmt.Errorf("process group of %d: %w", pid, err)
	}
	return st.PGID, nil
}

// ProcessID is a process as it was when identified: its pid, start time
// and the boot it ran in, so that a pid reused by another process is not
// taken for it (JSON: pid, startTicks, bootID).
type ProcessID = procIdent

// IdentifyProcess identifies a live process (IdentifyProcess(pid).Signal
// signals it only while it is the same process).
func IdentifyProcess(pid int) (ProcessID, error) { return identify(pid) }

// Signal sends sig to the identified process if it still runs and is the
// same process (a pidfd held across the check), and reports whether it
// did.
func (id procIdent) Signal(sig unix.Signal) (bool, error) { return id.signal(sig) }
