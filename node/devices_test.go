package node

import (
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestDevicesPlacement: with gpu.devices naming GPU 1 of two, every job
// goes to GPU 1 (under priority shares, so that all three fit), even
// with spread on and GPU 0 idle.
func TestDevicesPlacement(t *testing.T) {
	two := []fakegpu.GPUSpec{{Model: "H200-141GB"}, {Model: "H200-141GB"}}
	m := fakeMPS(t)
	h := newHarnessWith(t, two, false, curveEstimator{}, nil, func(c *Config) {
		b, err := partitioner.Devices(c.Backend, []string{"1"})
		if err != nil {
			t.Fatal(err)
		}
		c.Backend, c.MPS, c.PriorityShares, c.Spread = b, m, true, true
	})
	for _, name := range []string{"a", "b", "c"} {
		j := h.submit(sh(name, "trap 'exit 0' TERM; sleep 30 & wait", ""))
		if got := h.state(j.ID, jobs.Running); got.Placement == nil || got.Placement.GPU != 1 {
			t.Errorf("job %s placed %+v, want GPU 1", name, got.Placement)
		}
	}
}
