package node

import (
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/slo"
)

// TestTPCMapOfAGPU: a GPU's kernel scheduler masks by its own map (by
// UUID) where the ladder masks and MIG is off; a MIG instance, a GPU
// without a map and a ladder without masks get none.
func TestTPCMapOfAGPU(t *testing.T) {
	m := &slo.TPCMap{UUID: "GPU-a", Slots: 2, SMs: 4, TPCs: map[int][]int{0: {0, 1}, 1: {2, 3}}}
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
		uuid   string
		mig    bool
		want   *slo.TPCMap
	}{
		{"its own map", masks, "GPU-a", false, m},
		{"another GPU", masks, "GPU-b", false, nil},
		{"a MIG instance", masks, "GPU-a", true, nil},
		{"no masks in the ladder", plain, "GPU-a", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: Config{SLO: &SLOConfig{Controller: slo.Config{Ladder: tc.ladder}, TPCMaps: map[string]*slo.TPCMap{"GPU-a": m}}}}
			g := gpuInfo{state: partitioner.GPUState{GPU: partitioner.GPU{UUID: tc.uuid}}, mig: tc.mig}
			if got := n.tpcMap(g); got != tc.want {
				t.Errorf("tpcMap = %v, want %v", got, tc.want)
			}
		})
	}
}
