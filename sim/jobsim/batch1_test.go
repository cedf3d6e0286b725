package jobsim

import (
	"math"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

// TestBatch1FromTrace recomputes the batch-1 type's numbers from its
// kernel trace: its curve with the kernel-level simulator, its busy share
// and its occupancy from the kernels.
func TestBatch1FromTrace(t *testing.T) {
	tr, err := trace.LoadKernelTrace(trace.Resnet50Batch1, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.IterTime.Seconds() * 1000; math.Abs(got-batch1LatencyMs) > 1e-9 {
		t.Errorf("iteration %v ms, batch1LatencyMs %v", got, batch1LatencyMs)
	}
	gpu := sim.DefaultGPU()
	gpu.Model, gpu.BlockResidency, gpu.ShareStretch = sim.MPS, true, true
	scale, err := sim.CalibrateHostScale(tr, gpu, kernelsched.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mean := func(pct int) (time.Duration, float64) {
		res, err := sim.Simulate(sim.Config{Policy: "fifo", Duration: 2 * time.Second, GPU: gpu,
			Tasks: []sim.Task{{Name: "b1", Trace: tr, Arrival: sim.BackToBack, MPSPercent: pct, HostScale: scale}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tasks[0].Mean, res.GPUBusy
	}
	whole, busy := mean(100)
	if math.Abs(busy-batch1Busy) > 0.005 {
		t.Errorf("GPU busy alone %.4f, batch1Busy %v", busy, batch1Busy)
	}
	for k, want := range batch1Alone {
		at, _ := mean((k + 1) * steps)
		if got := float64(whole) / float64(at); math.Abs(got-want) > 0.005 {
			t.Errorf("at %d %%: speed %.4f, batch1Alone %v", (k+1)*steps, got, want)
		}
	}
	occ, kernels := 0.0, 0.0
	for _, it := range tr.Iterations {
		for _, k := range it {
			occ += k.Dur.Seconds() * float64(k.Occupancy) / 100 * min(1, float64(k.ID.Grid.Count())/132)
			kernels += k.Dur.Seconds()
		}
	}
	n := float64(len(tr.Iterations)) * tr.IterTime.Seconds()
	if got := occ / n; math.Abs(got-batch1Occ) > 0.0005 {
		t.Errorf("occupancy %.4f, batch1Occ %v", got, batch1Occ)
	}
	if got := kernels / n; math.Abs(got-batch1Busy) > 0.005 {
		t.Errorf("kernels' share of the iteration %.4f, batch1Busy %v", got, batch1Busy)
	}
}

// TestBatch1InTheModel: the built-in ground truth knows the batch-1 type,
// runs it alone at its trace's speeds, lets it load a co-runner's memory
// a little and takes less memory interference for it than for batch 32.
func TestBatch1InTheModel(t *testing.T) {
	m := builtinJobModels(t).Truth
	if !m.Has(trace.Resnet50Batch1) || m.LatencyMs(trace.Resnet50Batch1) != batch1LatencyMs {
		t.Fatalf("the ground truth lacks %s", trace.Resnet50Batch1)
	}
	if got := m.Alone(trace.Resnet50Batch1, 50); got != batch1Alone[4] {
		t.Errorf("alone at 50 %%: %v, want %v", got, batch1Alone[4])
	}
	x := m.memLoad(CoShare{Job: batch1Like, Pct: 100}, 100, []CoShare{{Job: trace.Resnet50Batch1, Pct: 100}})
	if x <= 0 || x > 0.05 {
		t.Errorf("its DRAM load on a co-runner %.3f of peak: want above 0, at most 5 %%", x)
	}
	if a := m.interference[trace.Resnet50Batch1]; !(a > 0 && a < m.interference[batch1Like]) {
		t.Errorf("its memory interference %v: want above 0 and below %s's %v", a, batch1Like, m.interference[batch1Like])
	}
}
