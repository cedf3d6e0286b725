package server

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// TestOnConnect: the server names each connecting task by its process
// id (the kernel's record of the socket's peer), here the replay process
// the hook runs in, once per connection.
func TestOnConnect(t *testing.T) {
	a := buildC(t)
	var mu sync.Mutex
	var pids []int
	s, sock := startServerWith(t, Config{Policy: "fifo", OnConnect: func(pid int) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	}})
	cmd := replay(context.Background(), a, writeTrace(t, 20, 2, 0), 1, "MMK_SCHED_SOCKET="+sock, "MMK_TASK_NAME=one")
	runReplay(t, cmd)
	waitFor(t, func() bool { return s.Counters().Tasks == 0 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Errorf("OnConnect saw %v, want [%d]", pids, cmd.Process.Pid)
	}
}
