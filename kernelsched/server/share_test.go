package server

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// jobSeam is an Identify for tests: every connecting process is a task
// of the job it names at the time (all the test's connections come from
// one process, so the kernel's word cannot tell them apart).
type jobSeam struct {
	mu  sync.Mutex
	job string
}

func (j *jobSeam) set(job string) {
	j.mu.Lock()
	j.job = job
	j.mu.Unlock()
}

func (j *jobSeam) identify(Peer) (Identity, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Identity{Priority: 5, TaskKey: j.job, Name: j.job, Job: j.job}, nil
}

// unread is how many bytes c sent that its peer has not read yet
// (SIOCOUTQ: a Unix stream socket's bytes are the sender's until read).
func unread(t *testing.T, c *net.UnixConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatal(ierr)
	}
	return n
}

// heldNames is the bytes of kernel names the server holds for its tasks.
func heldNames(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	for _, tk := range s.tasks {
		for _, n := range tk.names {
			held += len(n)
		}
	}
	return held
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestOneJobCannotTakeTheScheduler (issue 38, row 3): one job opening
// task after task takes at most its share of the task slots (a quarter),
// and another job's task is still welcomed and scheduled. Before, the
// first job took all of them and the other's hook was refused (its job
// ran unscheduled).
func TestOneJobCannotTakeTheScheduler(t *testing.T) {
	tests := []struct {
		maxTasks, hogTries int
	}{
		{16, 16},
		{16, 40},
		{DefaultMaxTasks, DefaultMaxTasks},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d slots, %d tries", tt.maxTasks, tt.hogTries), func(t *testing.T) {
			seam := &jobSeam{job: "hog"}
			s, sock := startServerWith(t, Config{Policy: "fifo", MaxTasks: tt.maxTasks, Identify: seam.identify})
			welcomed := 0
			for range tt.hogTries {
				c, status := hookConn(t, sock, helloBytes(5, false, "hog"))
				defer c.Close()
				if status == 0 {
					welcomed++
				}
			}
			waitFor(t, func() bool { return s.Counters().Tasks == welcomed })
			if share := tt.maxTasks / 4; welcomed > share {
				t.Errorf("one job holds %d of %d task slots, more than its share %d", welcomed, tt.maxTasks, share)
			}
			for _, job := range []string{"victim", "late"} {
				seam.set(job)
				c, status := hookConn(t, sock, helloBytes(5, false, job))
				defer c.Close()
				if status != 0 {
					t.Fatalf("job %s's task refused (welcome status %d) while job hog holds %d of %d slots", job, status, welcomed, tt.maxTasks)
				}
				waitFor(t, func() bool {
					for _, tv := range s.Tasks() {
						if tv.Name == job {
							return true
						}
					}
					return false
				})
			}
		})
	}
}

// TestNamesMemoryPerJob (issue 38, row 3): the kernel names one job's
// tasks make the server keep are bounded (a task keeps at most
// maxNameBytesTask, a job a quarter of maxNameBytes), measured both by
// the server's table and by the live heap; names past them are read and
// not kept, and the task stays. Another job's names are still kept, and
// when the tasks go the heap goes back. Before, each task kept 8 MiB
// (256 of them 2 GB, resident for minutes).
func TestNamesMemoryPerJob(t *testing.T) {
	tests := []struct {
		maxTasks, perTask int // each task of the job sends perTask bytes of names
	}{
		{16, 4 << 20},              // 4 tasks: the task's cap
		{DefaultMaxTasks, 5 << 18}, // 64 tasks of 1.25 MiB: the job's share
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d slots, %d KiB a task", tt.maxTasks, tt.perTask>>10), func(t *testing.T) {
			seam := &jobSeam{job: "hog"}
			s, sock := startServerWith(t, Config{Policy: "fifo", MaxTasks: tt.maxTasks, Identify: seam.identify})
			base := heap()
			var conns []*net.UnixConn
			for range tt.maxTasks {
				c, status := hookConn(t, sock, helloBytes(5, false, "hog"))
				if status != 0 {
					c.Close()
					continue
				}
				conns = append(conns, c)
			}
			waitFor(t, func() bool { return s.Counters().Tasks == len(conns) })
			name := bytes.Repeat([]byte("k"), maxNameLen)
			for _, c := range conns {
				for id := uint32(1); id <= uint32(tt.perTask/maxNameLen); id++ {
					if _, err := c.Write(nameMsg(id, name)); err != nil {
						t.Fatalf("a task within the caps was dropped: %v", err)
					}
				}
			}
			for _, c := range conns {
				waitFor(t, func() bool { return unread(t, c) == 0 })
			}
			if n := s.Counters().Tasks; n != len(conns) {
				t.Fatalf("%d tasks of %d stayed", n, len(conns))
			}
			held, grown := heldNames(s), heap()-base
			bound := min(len(conns)*maxNameBytesTask, maxNameBytes/4)
			t.Logf("%d tasks sent %d KiB of names each; the server holds %d bytes of them, the heap grew %d bytes", len(conns), tt.perTask>>10, held, grown)
			if held > bound {
				t.Errorf("one job's %d tasks made the server hold %d bytes of names, more than %d", len(conns), held, bound)
			}
			// The heap holds the names and little else: a map entry and a
			// string header per name, the tasks' goroutines and buffers
			// (slack 2 MiB).
			if slack := int64(2 << 20); grown > int64(bound)+slack {
				t.Errorf("the heap grew %d bytes, more than the names' bound %d and %d of slack", grown, bound, slack)
			}
			// Another job's names are kept.
			seam.set("other")
			c, status := hookConn(t, sock, helloBytes(5, false, "other"))
			if status != 0 {
				t.Fatalf("another job's task refused: welcome status %d", status)
			}
			if _, err := c.Write(nameMsg(1, []byte("other_kernel"))); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return heldNames(s) == held+len("other_kernel") })
			c.Close()
			for _, c := range conns {
				c.Close()
			}
			waitFor(t, func() bool { return s.Counters().Tasks == 0 })
			if after := heap() - base; after > 2<<20 {
				t.Errorf("after the tasks went the heap holds %d bytes more than before", after)
			}
			if n := s.shares.nameBytes(); n != 0 {
				t.Errorf("after the tasks went the shares count %d bytes of names", n)
			}
		})
	}
}
