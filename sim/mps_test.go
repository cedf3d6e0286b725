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
		lpWaves   int
		wantHPEnd time.Duration
		wantLPEnd time.Duration
	}{
		// Processor sharing: 192 SMs wanted of 132, both at 132/192 from
		// 200 us; the online kernel's 100 us take 145.5 us.
		{"sharing", []int{0, 0}, false, 1, 200*us + 146*us, 1000*us + 46*us},
		// Priority, SMs move at once: the online kernel at full speed, the
		// offline one at 72/132 meanwhile.
		{"priority", []int{0, 1}, false, 1, 300 * us, 1000*us + 46*us},
		// Priority and residency, one long wave: the online kernel waits for
		// the offline kernel's blocks to end at 1000 us.
		{"priority, resident one wave", []int{0, 1}, true, 1, 1100 * us, 1000 * us},
		// Four waves of 250 us: it waits for the first wave's end only.
		{"priority, resident four waves", []int{0, 1}, true, 4, 350 * us, 1000*us + 46*us},
		// No priority, resident: it waits for the wave, then shares.
		{"sharing, resident four waves", []int{0, 0}, true, 4, 250*us + 146*us, 1000*us + 46*us},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newMPSGPU(132, tc.prio, tc.residency)
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
