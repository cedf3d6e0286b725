package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

// stopper is the latency controller's suspension for `mmkctl kernelsched
// serve`, which knows its tasks only by process: it signals only
// processes the server took from the kernel's word for the peer
// (SO_PEERCRED), never pid 1 or below, this process or its process group
// (issue 54: a hello declaring pid 0 or -1 stopped the server's own group
// or every process of the user), and only a process still the one it
// stopped (pid, start time and boot, through a pidfd). What it stopped
// is written to a file beside the socket before the signal, so that a
// server killed while a task is stopped resumes it when it starts again
// (resumeLeft), as it does at a clean exit.
type stopper struct {
	path    string
	mu      sync.Mutex
	stopped map[int]jobs.ProcessID
}

// stoppedFile is where a server on socket keeps what it stopped.
func stoppedFile(socket string) string { return socket + ".stopped" }

// newStopper resumes what a server of the same socket left stopped and
// returns the suspension of this one.
func newStopper(socket string) (*stopper, error) {
	s := &stopper{path: stoppedFile(socket), stopped: map[int]jobs.ProcessID{}}
	if err := s.resumeLeft(); err != nil {
		return nil, err
	}
	return s, nil
}

// resumeLeft continues the processes the file lists (those still the
// ones stopped) and empties it.
func (s *stopper) resumeLeft() error {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("processes a server stopped: %w", err)
	}
	var left []jobs.ProcessID
	if err := json.Unmarshal(data, &left); err != nil {
		return fmt.Errorf("processes a server stopped, %s: %w (move it aside after continuing them by hand)", s.path, err)
	}
	var errs []error
	for _, id := range left {
		if _, err := id.Signal(unix.SIGCONT); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("continue the processes a server stopped (%s): %w", s.path, err)
	}
	return os.Remove(s.path)
}

// suspend is server.SLOConfig.Suspend.
func (s *stopper) suspend(pids []int, stop bool, _ server.SuspendCause) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, pid := range pids {
		if err := s.signal(pid, stop); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// signal stops or continues one process and keeps the file up to date.
func (s *stopper) signal(pid int, stop bool) error {
	if !stop {
		id, ok := s.stopped[pid]
		if !ok {
			return nil
		}
		if _, err := id.Signal(unix.SIGCONT); err != nil {
			return fmt.Errorf("continue process %d: %w", pid, err)
		}
		delete(s.stopped, pid)
		return s.save()
	}
	if err := mayStop(pid); err != nil {
		return err
	}
	id, err := jobs.IdentifyProcess(pid)
	if err != nil {
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	// Written before the signal: a crash in between leaves a process
	// listed that runs, which the next start continues harmlessly.
	s.stopped[pid] = id
	if err := s.save(); err != nil {
		delete(s.stopped, pid)
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	if _, err := id.Signal(unix.SIGSTOP); err != nil {
		delete(s.stopped, pid)
		return errors.Join(fmt.Errorf("stop process %d: %w", pid, err), s.save())
	}
	return nil
}

// mayStop refuses a process the server must never stop: pid 1 or below
// (kill(2) reads 0 and -1 as groups), this process, or a process of this
// process's group.
func mayStop(pid int) error {
	if pid <= 1 || pid == os.Getpid() {
		return fmt.Errorf("process %d: not stopped (not a task's process)", pid)
	}
	pg, err := syscall.Getpgid(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if pg == syscall.Getpgrp() {
		return fmt.Errorf("process %d: not stopped (in the server's own process group)", pid)
	}
	return nil
}

// save writes the stopped processes (an empty file is removed).
func (s *stopper) save() error {
	if len(s.stopped) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	ids := make([]jobs.ProcessID, 0, len(s.stopped))
	for _, id := range s.stopped {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b jobs.ProcessID) int { return a.PID - b.PID })
	data, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return atomicfile.WriteFunc(s.path, 0o600, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
