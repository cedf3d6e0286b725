package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched/server"
)

// sleeper starts a process that sleeps, in a process group of its own
// (group) or in the test's.
func sleeper(t *testing.T, group bool) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

// procState is the state letter of /proc/PID/stat (T: stopped).
func procState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// waitState waits until pid is in state want.
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); procState(t, pid) != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("process %d is %s, want %s", pid, procState(t, pid), want)
		}
	}
}

// TestStopperRefuses (issue 54, item 5): the standalone server's
// suspension never signals pid 1 or below (kill(2) reads 0 and -1 as
// groups), itself, or a process of its own group; a task's process in a
// group of its own is stopped.
func TestStopperRefuses(t *testing.T) {
	mine := sleeper(t, false)
	own := sleeper(t, true)
	for _, tc := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"pid 0, the server's group", 0, false},
		{"pid -1, every process of the user", -1, false},
		{"pid 1", 1, false},
		{"the server itself", os.Getpid(), false},
		{"a process of the server's group", mine.Process.Pid, false},
		{"a task in a group of its own", own.Process.Pid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := newStopper(filepath.Join(t.TempDir(), "sched.sock"))
			if err != nil {
				t.Fatal(err)
			}
			err = st.suspend([]int{tc.pid}, true, server.SuspendCause{})
			if (err == nil) != tc.ok {
				t.Fatalf("stop %d: %v, want ok %v", tc.pid, err, tc.ok)
			}
			if tc.ok {
				waitState(t, tc.pid, "T")
				if err := st.suspend([]int{tc.pid}, false, server.SuspendCause{}); err != nil {
					t.Fatal(err)
				}
				waitState(t, tc.pid, "S")
			}
		})
	}
	if s := procState(t, mine.Process.Pid); s == "T" {
		t.Errorf("the process of the server's group was stopped")
	}
}

// TestStopperResumesAfterACrash: a server killed while a task is stopped
// leaves the task listed beside its socket; the next server on that
// socket continues it and empties the list. A listed process that ended
// (its pid maybe reused) is not signalled.
func TestStopperResumesAfterACrash(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sched.sock")
	task, gone := sleeper(t, true), sleeper(t, true)
	st, err := newStopper(sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.suspend([]int{task.Process.Pid, gone.Process.Pid}, true, server.SuspendCause{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, task.Process.Pid, "T")
	if _, err := os.Stat(stoppedFile(sock)); err != nil {
		t.Fatalf("no record of what was stopped: %v", err)
	}
	// The server dies (st is dropped without resuming); one task ends.
	_ = gone.Process.Kill()
	_ = gone.Wait()
	if _, err := newStopper(sock); err != nil {
		t.Fatal(err)
	}
	waitState(t, task.Process.Pid, "S")
	if _, err := os.Stat(stoppedFile(sock)); !os.IsNotExist(err) {
		t.Errorf("the record is left: %v", err)
	}
}
