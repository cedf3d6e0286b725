package server

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHookChecksWelcome: the hook maps the server's shared memory only
// when it cannot be cut short under the job (a memfd sealed against
// shrinking and growing, of the size announced) and writes wake-ups only
// into an eventfd. A welcome that fails is refused: the job runs
// unscheduled, its launches unpublished, and never dies of SIGBUS.
func TestHookChecksWelcome(t *testing.T) {
	a := buildC(t)
	trace := writeTrace(t, 200, 2, 0)
	// unsealed sends a memfd of size bytes that nothing seals.
	unsealed := func(size int64) func(t *testing.T) (int, int) {
		return func(t *testing.T) (int, int) {
			fd, err := unix.MemfdCreate("evil", unix.MFD_CLOEXEC)
			if err == nil {
				err = unix.Ftruncate(fd, size)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			return fd, mustEventfd(t)
		}
	}
	pipeEnd := func(t *testing.T) int {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
		return p[1]
	}
	// sealed sends the server's own slot and the wake-up wake makes.
	sealed := func(wake func(*testing.T) int) func(t *testing.T) (int, int) {
		return func(t *testing.T) (int, int) {
			sl, err := newSlot("test")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sl.close)
			return sl.fd, wake(t)
		}
	}
	tests := []struct {
		name string
		// fds are the descriptors the server sends; after runs once the
		// welcome is sent (it may cut the memory short).
		fds      func(t *testing.T) (mem, wake int)
		after    func(mem int)
		accepted bool
	}{
		{"sealed slot and eventfd", sealed(mustEventfd), nil, true},
		{"memory smaller than announced", unsealed(4096), nil, false},
		{"memory shrunk after the welcome", unsealed(slotBytes), func(mem int) { _ = unix.Ftruncate(mem, 0) }, false},
		{"wake-up is a pipe", sealed(pipeEnd), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			mem, wake := tc.fds(t)
			published := make(chan uint64, 1)
			serveOnce(t, sock, func(c *net.UnixConn) {
				if _, err := io.ReadFull(c, make([]byte, helloSize)); err != nil {
					return
				}
				_, _, _ = c.WriteMsgUnix(welcome(0), rights(mem, wake), nil)
				if tc.after != nil {
					tc.after(mem)
				}
				// Wait for the hook to go, then read what it published.
				_, _ = io.Copy(io.Discard, c)
				// Read, not mapped: the memory may have been cut.
				var b [8]byte
				head := uint64(0)
				if n, err := unix.Pread(mem, b[:], offHead); err == nil && n == 8 {
					head = binary.LittleEndian.Uint64(b[:])
				}
				published <- head
			})
			r := runReplay(t, replay(context.Background(), a, trace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=5"))
			if r.Launches != 200 || r.Hook.Launches != 200 {
				t.Errorf("%d launches (hook saw %d), want 200", r.Launches, r.Hook.Launches)
			}
			var head uint64
			select {
			case head = <-published:
			case <-time.After(10 * time.Second):
				t.Fatal("the hook did not close its connection")
			}
			if got := head > 0; got != tc.accepted {
				t.Errorf("the hook published %d entries: accepted %v, want %v", head, got, tc.accepted)
			}
		})
	}
}

// TestReconnectNeverStallsLaunches: the server goes away while the job
// runs, and what answers at its socket afterwards takes connections but
// never welcomes them (a mute or stopped server). The hook connects again
// from its own thread: no launch waits anywhere near the second the
// welcome is awaited (the bound is 10 ms; once the launching thread made
// that connection and stalled a launch for 1.02 s).
func TestReconnectNeverStallsLaunches(t *testing.T) {
	a := buildC(t)
	// 300 launches 10 ms apart: three seconds, past the hook's first
	// attempt to connect again (a second after the server went).
	trace := writeTrace(t, 300, 2, 10000)
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			if accepted.Add(1) == 1 {
				// The first connection is served for a moment, then the
				// server "dies": its side of the connection closes.
				go welcomeThen(t, func(*slot) { time.Sleep(300 * time.Millisecond) })(c)
				go func() { time.Sleep(400 * time.Millisecond); c.Close() }()
				continue
			}
			mu.Lock()
			held = append(held, c) // mute: never read, never answered
			mu.Unlock()
		}
	}()
	r := runReplay(t, replay(context.Background(), a, trace, 1, "MMK_SCHED_SOCKET="+sock, "MMK_PRIORITY=0", "MMK_ONLINE=1"))
	if accepted.Load() < 2 {
		t.Fatalf("the hook made %d connections: no reconnection to test", accepted.Load())
	}
	if r.Launches != 300 {
		t.Errorf("%d launches, want 300", r.Launches)
	}
	// Generous next to the 10 ms bound, far below the 1 s the welcome is
	// awaited: a loaded machine may delay a launch, not by a second.
	if r.MaxWaitUs > 500e3 {
		t.Errorf("a launch waited %.0f us while the hook connected again (bound 10 ms)", r.MaxWaitUs)
	}
	t.Logf("%d connections; longest launch %.0f us", accepted.Load(), r.MaxWaitUs)
}
