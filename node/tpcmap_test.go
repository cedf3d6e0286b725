package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/slo"
)

// TestTPCMapOfAGPU: a GPU's kernel scheduler masks by its own map (by
// UUID) where the ladder masks and MIG is off, else by the one measured
// on its product (an H100 80GB HBM3 of 132 SMs); a MIG instance, another
// GPU without a map and a ladder without masks get none.
func TestTPCMapOfAGPU(t *testing.T) {
	m := &slo.TPCMap{UUID: "GPU-a", Slots: 72, SMs: 132, TPCs: map[int][]int{0: {0, 1}, 1: {2, 3}}}
	masks, err := slo.ParseLadder([]string{"priority", "tpcs=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := slo.ParseLadder([]string{"priority", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		ladder slo.Ladder
		gpu    partitioner.GPU
		mig    bool
		want   string // the map's UUID ("": none)
	}{
		{"its own map", masks, partitioner.GPU{UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", SMs: 132}, false, "GPU-a"},
		{"an H100 without one: the measured one", masks, partitioner.GPU{UUID: "GPU-b", Name: "NVIDIA H100 80GB HBM3", SMs: 132}, false, slo.H100TPCMap().UUID},
		{"another GPU", masks, partitioner.GPU{UUID: "GPU-c", Name: "NVIDIA A100-SXM4-40GB", SMs: 108}, false, ""},
		{"its map of another SM count: none", masks, partitioner.GPU{UUID: "GPU-a", Name: "NVIDIA A100-SXM4-40GB", SMs: 108}, false, ""},
		{"a MIG instance", masks, partitioner.GPU{UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", SMs: 132}, true, ""},
		{"no masks in the ladder", plain, partitioner.GPU{UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", SMs: 132}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), SLO: &SLOConfig{Controller: slo.Config{Ladder: tc.ladder}, TPCMaps: map[string]*slo.TPCMap{"GPU-a": m}}}}
			got := n.tpcMap(gpuInfo{state: partitioner.GPUState{GPU: tc.gpu}, mig: tc.mig})
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("a map of %s, want none", got.UUID)
			case tc.want != "" && (got == nil || got.UUID != tc.want):
				t.Errorf("map %v, want that of %s", got, tc.want)
			}
		})
	}
}
