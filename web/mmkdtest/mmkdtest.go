// Package mmkdtest runs a real mmkd in a test's process: the placement
// loop (node) on fake GPUs, its store in the test's directory, MPS
// through the stand-in control program (mps/mpstest) with priority shares,
// and the REST API (web) on a loopback listener. The claim API's tests
// (web), the DRA driver's (dra) and mmkctl's talk to it as they would to
// mmkd. It lives beside the API it serves, on web's floor: it imports
// node and web, so neither of them nor anything below them may use it
// (layers_test.go); webtest is the fake node, this the real one.
package mmkdtest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/mps/mpstest"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
	"github.com/mmkgpu/mmk/web"
)

// Daemon is a running mmkd.
type Daemon struct {
	// URL is the API's base address (http://127.0.0.1:PORT).
	URL     string
	Node    *node.Node
	Backend partitioner.Backend
}

// Estimator is a deterministic predictor for tests: a job's speed is its
// instance's share of the GPU's SMs at its share of them, with no
// contention.
type Estimator struct{}

// Speed implements partitioner.Estimator.
func (Estimator) Speed(_ partitioner.Job, sms, gpuSMs, percent int, _ []partitioner.Share) (float64, error) {
	return float64(sms) / float64(gpuSMs) * float64(percent) / 100, nil
}

// Start runs mmkd on the fake GPUs until the test ends. Its jobs run
// under the test binary as their supervisor only if the test's TestMain
// calls jobs.ShimMain when MMK_MMKDTEST_SHIM is 1; claim jobs need none.
func Start(t testing.TB, gpus []fakegpu.GPUSpec) *Daemon {
	t.Helper()
	return StartWith(t, gpus, nil)
}

// StartWith is Start with edit changing the node's configuration first
// (kernel scheduling, the latency controller, ...).
func StartWith(t testing.TB, gpus []fakegpu.GPUSpec, edit func(*node.Config)) *Daemon {
	t.Helper()
	dir := t.TempDir()
	backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: gpus})
	if err != nil {
		t.Fatalf("mmkdtest: fake GPUs: %v", err)
	}
	t.Cleanup(func() { backend.Close() })
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		t.Fatalf("mmkdtest: store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	log := slog.New(slog.DiscardHandler)
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: os.Args[0],
		ShimEnv: []string{"MMK_MMKDTEST_SHIM=1"}, StopGrace: time.Second, Logger: log})
	if err != nil {
		t.Fatalf("mmkdtest: runner: %v", err)
	}
	ctl, err := mpstest.WriteControl(dir)
	if err != nil {
		t.Fatalf("mmkdtest: MPS control stand-in: %v", err)
	}
	m, err := mps.NewManager(mps.Options{Root: filepath.Join(dir, "mps"), Control: ctl})
	if err != nil {
		t.Fatalf("mmkdtest: MPS: %v", err)
	}
	cfg := node.Config{Backend: backend, Store: store, Runner: runner, Estimator: Estimator{},
		MPS: m, PriorityShares: true, Spread: true, Log: log,
		// Jobs run as the test's user, root in a container.
		AllowRoot: true}
	if edit != nil {
		edit(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatalf("mmkdtest: node: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	srv := web.New(web.Options{Backend: backend, Node: n, Log: log})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mmkdtest: node: %v", err)
		}
		quit, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		for _, k := range m.Keys() {
			if err := m.Quit(quit, k); err != nil {
				t.Errorf("mmkdtest: quit MPS daemon %s: %v", k, err)
			}
		}
	})
	for n.Ready(ctx) != nil {
		time.Sleep(time.Millisecond)
	}
	return &Daemon{URL: hs.URL, Node: n, Backend: backend}
}
