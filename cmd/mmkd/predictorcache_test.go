package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/predictor"
)

// startAndStop runs mmkd on the fake backend in dataDir until it is
// ready, then stops it.
func startAndStop(t *testing.T, dataDir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, flagsFor(t, "--backend", "fake", "--listen", "127.0.0.1:0", "--log-level", "error", "--data-dir", dataDir), func(a net.Addr) { ready <- a })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("mmkd stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("mmkd did not start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSecondStartLoadsThePredictor (issue 38, restart): mmkd trains its
// predictor on its first start and keeps it in the data directory; the
// next start loads it (the train function is not called) and a damaged
// cache is trained again. Before, every start trained (restart to ready
// doubled to 0.40-0.82 s).
func TestSecondStartLoadsThePredictor(t *testing.T) {
	var trains atomic.Int32
	old := trainModel
	trainModel = func(s []predictor.Sample, seed uint64) (*predictor.Model, error) {
		trains.Add(1)
		return predictor.TrainDefault(s, seed)
	}
	t.Cleanup(func() { trainModel = old })
	dataDir := t.TempDir()
	steps := []struct {
		name   string
		before func()
		trains int32
	}{
		{"first start", nil, 1},
		{"second start", nil, 1},
		{"a damaged cache", func() {
			if err := os.WriteFile(filepath.Join(dataDir, predictor.CacheFile), []byte(`{"key":`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"after it", nil, 2},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		startAndStop(t, dataDir)
		if n := trains.Load(); n != st.trains {
			t.Errorf("%s: the predictor trained %d times in all, want %d", st.name, n, st.trains)
		}
	}
}
