package node

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

// TestSchedulerIdentifiesJobs: a job whose hook declares another
// priority and kind (its command sets MMK_PRIORITY=0 MMK_ONLINE=1 before
// the program) shows in its instance's kernel scheduler with the job's
// own (5, offline): the scheduler asks mmkd who the connecting process
// is. A job of another user connects through a socket of that user's
// (0600, theirs). Needs root for the second part.
func TestSchedulerIdentifiesJobs(t *testing.T) {
	hook, cupti, replay := buildHookFakes(t)
	trace := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(trace, []byte("k1 4 1 1 128 1 1 100 2000\nsync 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := &SchedConfig{Policy: "fifo", Hook: hook, Cupti: cupti, SocketDir: filepath.Join(dir, "run"), ProfileDir: filepath.Join(dir, "profiles")}
	h := newHarnessWith(t, h200, false, curveEstimator{"half_train": 50}, sc)
	liar := jobs.Spec{Name: "liar", Kind: jobs.Offline, TaskKey: "liar",
		Command: []string{"env", "MMK_PRIORITY=0", "MMK_ONLINE=1", replay, trace, "0", "3"}, Workload: &jobs.Workload{Model: "half", Mode: "train"}}
	j := h.submit(liar)
	j = h.state(j.ID, jobs.Running)
	task := waitTask(t, h, "liar")
	if task.Priority != 5 || task.Online || task.Key != "liar" {
		t.Errorf("the scheduler took the hook's word: %+v, want the job's priority 5, offline", task)
	}
	// A process that is no job's is refused.
	sock := filepath.Join(sc.SocketDir, j.Placement.InstanceKey+".sock")
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("scheduler socket %v %v, want 0600", st, err)
	}
	refusedBefore := h.n.Schedulers()[0].Counters.Refused
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// A well-formed hello (struct mmk_hello, protocol 4) from this test,
	// which is no job's process.
	hello := make([]byte, 4+2+2+4*4+128+64)
	binary.LittleEndian.PutUint32(hello, server.ProtoMagic)
	binary.LittleEndian.PutUint16(hello[4:], server.ProtoVersion)
	binary.LittleEndian.PutUint16(hello[6:], uint16(len(hello)))
	binary.LittleEndian.PutUint32(hello[8:], uint32(os.Getpid()))
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Read(make([]byte, 16))
	c.Close()
	if got := h.n.Schedulers()[0].Counters.Refused; got <= refusedBefore {
		t.Errorf("a stranger's connection was not refused (refused %d before, %d after)", refusedBefore, got)
	}
	h.state(j.ID, jobs.Succeeded)

	if os.Geteuid() != 0 {
		return
	}
	// Other users' jobs reach the hook, the replay and their directories.
	for _, p := range []string{filepath.Dir(hook), sc.SocketDir, filepath.Dir(trace)} {
		openToOthers(t, p, 0o755)
	}
	chmodRunnerRoot(t, h)
	nobody := jobs.NamedOwner(65534, 65534)
	spec := liar
	spec.Name, spec.TaskKey = "nobody", "nobody"
	n, _, err := h.n.Submit(context.Background(), spec, "", &nobody)
	if err != nil {
		t.Fatal(err)
	}
	h.state(n.ID, jobs.Running)
	if task := waitTask(t, h, "nobody"); task.Priority != 5 {
		t.Errorf("the job of uid 65534: %+v", task)
	}
	user := filepath.Join(sc.SocketDir, j.Placement.InstanceKey+".u"+strconv.Itoa(65534)+".sock")
	if st, err := os.Stat(user); err != nil || st.Mode().Perm() != 0o600 || ownerOf(st) != 65534 {
		t.Errorf("the user's socket %v %v, want 0600 owned by 65534", st, err)
	}
	h.state(n.ID, jobs.Succeeded)
}

// waitTask waits for the task named name in the node's schedulers.
func waitTask(t *testing.T, h *harness, name string) (task struct {
	Priority int
	Online   bool
	Key      string
}) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, s := range h.n.Schedulers() {
			for _, tv := range s.Tasks {
				if tv.Name == name {
					task.Priority, task.Online, task.Key = tv.Priority, tv.Online, tv.Key
					return task
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no task %q in the schedulers", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
