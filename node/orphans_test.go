package node

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

// lostStoreNode is a node on a data directory that outlives it, for
// tests that lose the store between two nodes.
type lostStoreNode struct {
	t      *testing.T
	dir    string
	runner *jobs.Runner
	store  *jobs.Store
	n      *Node
	cancel context.CancelFunc
	done   chan error
}

func startOn(t *testing.T, dir string) (*lostStoreNode, error) {
	t.Helper()
	backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: h200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	log := slog.New(slog.NewTextHandler(testWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	runner := testRunner(t, dir, log)
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{Backend: backend, Store: store, Runner: runner, Estimator: curveEstimator{"half_train": 50}, AllowRoot: true,
		StopGrace: 5 * time.Second, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}, Log: log})
	if err != nil {
		store.Close()
		return nil, err
	}
	// Jobs outlive nodes: whatever the test left running is stopped
	// when it ends, before its directories go.
	t.Cleanup(func() {
		ids, _ := runner.JobIDs()
		for _, id := range ids {
			if runner.Stop(id, time.Millisecond) == nil {
				<-runner.Wait(context.Background(), id)
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	s := &lostStoreNode{t: t, dir: dir, runner: runner, store: store, n: n, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- n.Run(ctx) }()
	for !n.ready.Load() {
		time.Sleep(time.Millisecond)
	}
	return s, nil
}

// stop stops the node (its jobs keep running) and closes its store.
func (s *lostStoreNode) stop() {
	s.cancel()
	if err := <-s.done; err != nil {
		s.t.Error(err)
	}
	s.store.Close()
}

func (s *lostStoreNode) until(id string, ok func(jobs.Job) bool) jobs.Job {
	s.t.Helper()
	h := &harness{t: s.t, n: s.n}
	return h.until(id, "condition", ok)
}

// TestLostStoreAdoptsJobs: the store is lost while jobs run (deleted,
// or replaced by an older one that has the job pending): the next node
// adopts the running job from its directory (running, same process, and
// it ends with its exit status), records the one that ended meanwhile,
// and does not start either again.
func TestLostStoreAdoptsJobs(t *testing.T) {
	// kept: the store as it was, which knows both runs: nothing adopted.
	for _, how := range []string{"deleted", "older", "kept"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			s, err := startOn(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			script, gate := gated(t, "7")
			long, _, err := s.n.Submit(context.Background(), sh("long", script, "half"), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if how == "older" {
				if err := s.store.Backup(filepath.Join(dir, "old.db")); err != nil {
					t.Fatal(err)
				}
			}
			quick, _, err := s.n.Submit(context.Background(), sh("quick", "exit 3", "half"), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			running := s.until(long.ID, func(j jobs.Job) bool { return j.State == jobs.Running })
			s.until(quick.ID, func(j jobs.Job) bool { return j.State == jobs.Failed })
			s.stop()
			switch how {
			case "deleted":
				if err := os.Remove(filepath.Join(dir, "mmk.db")); err != nil {
					t.Fatal(err)
				}
			case "older":
				if err := os.Rename(filepath.Join(dir, "old.db"), filepath.Join(dir, "mmk.db")); err != nil {
					t.Fatal(err)
				}
			}
			s, err = startOn(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.stop()
			j, err := s.n.Job(long.ID)
			if err != nil || j.State != jobs.Running || j.PID != running.PID || strings.Contains(j.Reason, "adopted") != (how != "kept") {
				t.Fatalf("the running job after the store was %s: %+v %v, want running pid %d, adopted unless kept", how, j, err, running.PID)
			}
			if q, err := s.n.Job(quick.ID); err != nil || q.State != jobs.Failed || q.ExitCode == nil || *q.ExitCode != 3 {
				t.Errorf("the job that ended: %+v %v", q, err)
			}
			open(t, gate)
			j = s.until(long.ID, func(j jobs.Job) bool { return j.State.Terminal() })
			if j.State != jobs.Failed || j.ExitCode == nil || *j.ExitCode != 7 || j.Restarts != 0 {
				t.Errorf("the adopted job ended %+v, want failed with exit 7, never restarted", j)
			}
		})
	}
}

// TestUnknownLiveJobStopsStart: a job directory whose shim runs a job
// that left no record to adopt it from (as an mmk before records did)
// keeps the node from starting beside it, naming it.
func TestUnknownLiveJobStopsStart(t *testing.T) {
	dir := t.TempDir()
	runner := testRunner(t, dir, slog.New(slog.DiscardHandler))
	script, gate := gated(t, "0")
	id := jobs.NewID(time.Now())
	if _, err := runner.Start(jobs.Launch{JobID: id, Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		open(t, gate)
		<-runner.Wait(context.Background(), id)
	}()
	_, err := startOn(t, dir)
	if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "no record") {
		t.Fatalf("start beside an unknown running job: %v", err)
	}
}
