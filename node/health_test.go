package node

import (
	"log/slog"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestGPUHealthHistory: each sample of the GPUs' health is kept for
// healthWindow of the node's clock, so that at a sample a second it
// holds the last ten minutes (600 samples); the view gives the last
// readings, as the backend read them, and the samples after a time.
func TestGPUHealthHistory(t *testing.T) {
	gpus := []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"}, {Model: "H200-141GB"}}
	f, b := fakeBackend(t, gpus)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	f.SetClock(clock)
	store, runner := offlineParts(t)
	n, err := New(Config{Backend: b, Store: store, Runner: runner, Estimator: curveEstimator{}, Now: clock, UsageEvery: time.Second,
		Log: slog.New(slog.NewTextHandler(testWriter(t), nil))})
	if err != nil {
		t.Fatal(err)
	}
	if v := n.Health(time.Time{}); !v.At.IsZero() || len(v.GPUs) != 0 || v.Every != time.Second || v.Window != healthWindow {
		t.Errorf("before any sample: %+v, want no GPU, sampled every second over %v", v, healthWindow)
	}
	if err := f.AttachProcess(1, "", 10, 1024); err != nil {
		t.Fatal(err)
	}
	if err := f.SetProcessUtilization(10, 50, 20); err != nil {
		t.Fatal(err)
	}
	const seconds = 700
	for i := range seconds {
		now = start.Add(time.Duration(i) * time.Second)
		if i == seconds-1 {
			if err := f.InjectXID(1, 13); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.sampleHealth(b); err != nil {
			t.Fatal(err)
		}
	}
	want, err := b.Health()
	if err != nil {
		t.Fatal(err)
	}
	v := n.Health(time.Time{})
	if !v.At.Equal(now) || len(v.GPUs) != 2 {
		t.Fatalf("view at %v with %d GPUs, want %v and 2", v.At, len(v.GPUs), now)
	}
	for i, g := range v.GPUs {
		if len(g.History) != 600 || !g.History[0].At.Equal(now.Add(-599*time.Second)) || !g.History[599].At.Equal(now) {
			t.Errorf("GPU %d: %d samples from %v, want 600, the last ten minutes", i, len(g.History), g.History[0].At)
		}
		// The last readings are the backend's at this time (the XID
		// taken by the node's read, not this one).
		w := want[i]
		last := g.History[len(g.History)-1]
		if g.GPU != w.GPU || g.UUID != w.UUID || *g.PowerW != *w.PowerW || *g.TempC != *w.TempC || *last.PowerW != *w.PowerW || *last.TempC != *w.TempC {
			t.Errorf("GPU %d: last %+v (sample %+v), want the backend's %+v", i, g.GPUHealth, last, w)
		}
	}
	if h := v.GPUs[0]; h.UtilPct != nil || h.History[0].UtilPct != nil || h.Unknown["utilPct"] == "" {
		t.Errorf("GPU 0 runs MIG: utilisation %v, unknown %v; want none, with NVML's reason", h.UtilPct, h.Unknown)
	}
	if h := v.GPUs[1]; *h.UtilPct != 50 || *h.History[0].UtilPct != 50 || *h.XIDs != 1 || h.LastXID != 13 {
		t.Errorf("GPU 1: utilisation %d %%, XIDs %d (last %d); want 50 %% and XID 13 once", *h.UtilPct, *h.XIDs, h.LastXID)
	}
	since := n.Health(now.Add(-3 * time.Second))
	for i, g := range since.GPUs {
		if len(g.History) != 3 || !g.History[0].At.Equal(now.Add(-2*time.Second)) {
			t.Errorf("GPU %d since 3 s ago: %d samples, want the 3 after it", i, len(g.History))
		}
	}
}
