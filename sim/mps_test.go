package sim

import (
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TestMPSPriorityAndResidency: an offline kernel (task 1) fills the GPU
// first; an online one (task 0) wanting 60 of 132 SMs arrives at 200 us.
// Its end shows when it got SMs and how many.
func TestMPSPriorityAndResidency(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		name      string
		prio      []int
		residency bool
		wait      time.Duration
		lpWaves   int
		wantHPEnd time.Duration
		wantLPEnd time.Duration
	}{
		// Processor sharing: 192 SMs wanted of 132, both at 132/192 from
		// 200 us; the online kernel's 100 us take 145.5 us.
		{"sharing", []int{0, 0}, false, 0, 1, 200*us + 146*us, 1000*us + 46*us},
		// Priority, SMs move at once: the online kernel at full speed, the
		// offline one at 72/132 meanwhile.
		{"priority", []int{0, 1}, false, 0, 1, 300 * us, 1000*us + 46*us},
		// Priority and residency, one long wave: the online kernel waits for
		// the offline kernel's blocks to end at 1000 us.
		{"priority, resident one wave", []int{0, 1}, true, 0, 1, 1100 * us, 1000 * us},
		// Four waves of 250 us: it waits for the first wave's end only.
		{"priority, resident four waves", []int{0, 1}, true, 0, 4, 350 * us, 1000*us + 46*us},
		// No priority, resident: it waits for the wave, then shares.
		{"sharing, resident four waves", []int{0, 0}, true, 0, 4, 250*us + 146*us, 1000*us + 46*us},
		// A dispatch wait of 50 us at equal priority: it shares from 250 us.
		{"sharing, dispatch wait", []int{0, 0}, false, 50 * us, 1, 250*us + 146*us, 1000*us + 46*us},
		// A higher priority skips the wait.
		{"priority, dispatch wait", []int{0, 1}, false, 50 * us, 1, 300 * us, 1000*us + 46*us},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newMPSGPU(132, tc.prio, tc.residency, tc.wait)
			g.submit(0, gpuKernel{task: 1, dur: 1000 * us, sms: 132, waves: tc.lpWaves})
			g.submit(200*us, gpuKernel{task: 0, dur: 100 * us, sms: 60, waves: 1})
			ends := map[int]time.Duration{}
			for len(ends) < 2 {
				at := g.due()
				if at == kernelsched.Never {
					t.Fatalf("nothing due with %d kernels done", len(ends))
				}
				for _, k := range g.fire(at, nil) {
					ends[k.task] = at
				}
			}
			if d := ends[0] - tc.wantHPEnd; d < -us || d > us {
				t.Errorf("online kernel ends at %v, want %v", ends[0], tc.wantHPEnd)
			}
			if d := ends[1] - tc.wantLPEnd; d < -us || d > us {
				t.Errorf("offline kernel ends at %v, want %v", ends[1], tc.wantLPEnd)
			}
		})
	}
}

// TestShareStretch: a kernel of many waves held to half the SMs by its
// MPS share runs twice its traced duration with ShareStretch, and its
// traced duration without.
func TestShareStretch(t *testing.T) {
	// 264 blocks of 1024 threads: 2 per SM, 1 wave on 132 SMs, 2 on 66.
	tr := synthetic("k", 1, time.Millisecond, 0)
	for i := range tr.Iterations[0] {
		tr.Iterations[0][i].ID.Grid = kernelsched.Dim3{264, 1, 1}
		tr.Iterations[0][i].ID.Block = kernelsched.Dim3{1024, 1, 1}
	}
	for _, tc := range []struct {
		stretch bool
		want    time.Duration
	}{{false, time.Millisecond}, {true, 2 * time.Millisecond}} {
		gpu := GPUConfig{Model: MPS, ShareStretch: tc.stretch}
		res, err := Simulate(Config{Policy: "fifo", Duration: time.Second, GPU: gpu, stopAfter: 1,
			Tasks: []Task{{Name: "k", Trace: tr, Arrival: BackToBack, MPSPercent: 50}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Tasks[0].Mean; got < tc.want || got > tc.want+50*time.Microsecond {
			t.Errorf("stretch %v: request takes %v, want %v", tc.stretch, got, tc.want)
		}
	}
}
