package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
)

// TestRestartGateKeeps: a job that keeps no checkpoint would lose its
// whole run to a restart, so the gate keeps it where it is and the new
// job waits (TestRestartOnReshare is the same case with a checkpoint, where
// the restart is worth it).
func TestRestartGateKeeps(t *testing.T) {
	h := newHarnessWith(t, h200, false, curveEstimator{"half_train": 50}, nil, func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Hour) }
	})
	full := h.submit(sh("full", `trap 'exit 0' TERM; sleep 30 & wait`, "lin"))
	h.state(full.ID, jobs.Running)
	half := h.submit(sh("half", "sleep 30", "half"))
	time.Sleep(500 * time.Millisecond) // several decisions
	if j := h.state(full.ID, jobs.Running); j.Restarts != 0 {
		t.Errorf("full restarted %d times, want none", j.Restarts)
	}
	if j, err := h.n.Job(half.ID); err != nil || j.State != jobs.Pending {
		t.Errorf("half: %s (%v), want pending", j.State, err)
	}
}

// TestRestartCost: each part of a job's restart cost, measured where
// mmkd measured it and assumed where not, and where the lost work comes
// from (no checkpoint, a checkpoint in this run, one from before it).
func TestRestartCost(t *testing.T) {
	h := newHarness(t, h200, false, curveEstimator{})
	j := h.state(h.submit(sh("w", "sleep 30", "lin")).ID, jobs.Running)
	now := j.StartedAt.Add(100 * time.Second)
	cost := func() (float64, float64, string) {
		t.Helper()
		got, err := h.n.Job(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		c, desc := h.n.restartCost(&got, now)
		return c.Lost, c.Horizon, desc
	}
	// Nothing measured: stop is StopGrace (5 s), start-up assumed, the
	// whole run (100 s) lost.
	lost, horizon, desc := cost()
	if want := 5 + assumedStartup.Seconds() + 100; lost != want || horizon != 100 {
		t.Errorf("nothing measured: lost %v, horizon %v (%s); want %v, 100", lost, horizon, desc, want)
	}
	for _, part := range []string{"stop 5.0s assumed", "start-up 20.0s assumed", "lost 100.0s no checkpoint"} {
		if !strings.Contains(desc, part) {
			t.Errorf("description %q lacks %q", desc, part)
		}
	}
	// Its first CUDA call (the scheduler's connect) 3 s after its start is
	// measured through its process group; a stop of its type took 2 s.
	h.n.connectedAt(j.PID, j.StartedAt.Add(3*time.Second))
	h.n.restarts.mu.Lock()
	h.n.restarts.stop[j.Type()] = 2 * time.Second
	h.n.restarts.mu.Unlock()
	dir, err := h.n.cfg.Runner.CheckpointDir(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "step")
	if err := os.WriteFile(ckpt, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		mtime time.Time
		lost  float64
		src   string
	}{
		{"checkpoint in this run", j.StartedAt.Add(90 * time.Second), 2 + 3 + 10, "lost 10.0s since checkpoint"},
		{"checkpoint from before this run", j.StartedAt.Add(-time.Minute), 2 + 3, "lost 0.0s saves on stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chtimes(ckpt, tc.mtime, tc.mtime); err != nil {
				t.Fatal(err)
			}
			lost, _, desc := cost()
			if diff := lost - tc.lost; diff > 1e-6 || diff < -1e-6 || !strings.Contains(desc, tc.src) || !strings.Contains(desc, "start-up 3.0s measured") || !strings.Contains(desc, "stop 2.0s measured") {
				t.Errorf("lost %v (%s), want %v with %q", lost, desc, tc.lost, tc.src)
			}
		})
	}
	// A second connect of the job (another process) keeps the first.
	h.n.connectedAt(j.PID, j.StartedAt.Add(50*time.Second))
	if _, _, desc := cost(); !strings.Contains(desc, "start-up 3.0s measured") {
		t.Errorf("after a second connect: %s", desc)
	}
	// An unknown process is ignored.
	h.n.connected(1 << 30)
}

// TestBatching: arrivals wait for more (arrivalQuiet) only where one can
// restart a running job; under priority shares with MIG left alone they
// are placed at once.
func TestBatching(t *testing.T) {
	for _, tc := range []struct {
		name             string
		shares, mps, mig bool
		causes           []string
		wait             bool
	}{
		{"arrivals, MPS shares by demand", false, true, false, []string{arrivalCause + "a"}, true},
		{"arrivals, priority shares", true, true, false, []string{arrivalCause + "a"}, false},
		{"arrivals, priority shares, MIG managed", true, true, true, []string{arrivalCause + "a"}, true},
		{"arrivals, priority shares without MPS", true, false, false, []string{arrivalCause + "a"}, true},
		{"a completion among them", false, true, false, []string{arrivalCause + "a", "completion of job b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: Config{PriorityShares: tc.shares, ManageMIG: tc.mig}, causes: tc.causes}
			if tc.mps {
				n.cfg.MPS = &mps.Manager{}
			}
			n.firstArrival, n.lastArrival = time.Now(), time.Now()
			if got := n.batching() > 0; got != tc.wait {
				t.Errorf("batching %v, want a wait: %v", n.batching(), tc.wait)
			}
		})
	}
}
