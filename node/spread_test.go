package node

import (
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestSpreadPlacement: on two GPUs under priority shares, with an
// estimator by which a second job gains as much next to the first as
// alone, placement.spread puts the second job on the empty GPU; without
// it Algorithm 1's predicted gain ties and the job joins the first.
func TestSpreadPlacement(t *testing.T) {
	two := []fakegpu.GPUSpec{{Model: "H200-141GB"}, {Model: "H200-141GB"}}
	tests := []struct {
		name    string
		spread  bool
		wantGPU int
	}{
		{"spread", true, 1},
		{"predicted gain alone", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := fakeMPS(t)
			h := newHarnessWith(t, two, false, curveEstimator{}, nil, func(c *Config) { c.MPS, c.PriorityShares, c.Spread = m, true, tc.spread })
			first := h.submit(sh("first", "trap 'exit 0' TERM; sleep 30 & wait", ""))
			if j := h.state(first.ID, jobs.Running); j.Placement == nil || j.Placement.GPU != 0 {
				t.Fatalf("first job placed %+v, want GPU 0", j.Placement)
			}
			second := h.submit(sh("second", "trap 'exit 0' TERM; sleep 30 & wait", ""))
			if j := h.state(second.ID, jobs.Running); j.Placement == nil || j.Placement.GPU != tc.wantGPU {
				t.Errorf("second job placed %+v, want GPU %d", j.Placement, tc.wantGPU)
			}
		})
	}
}
