package jobsim

import (
	"math"
	"testing"

	"github.com/mmkgpu/mmk/data"
)

// TestSliceFit: the built-in A100 slice runs parse (8 models x 5
// slices), the fitted MIG rule is closer to them than an MPS share of
// the slice's SMs, and the memory bandwidth share alone binds none of
// them (the reason the rule shrinks the whole GPU, not caps bandwidth).
func TestSliceFit(t *testing.T) {
	runs, err := data.SliceRuns()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 40 {
		t.Fatalf("%d slice runs, want 40", len(runs))
	}
	f := builtinJobModels(t).Truth.Slices()
	if f.Runs != 40 || !(f.W < 1) || !(f.MeanError < 0.7*f.MPSShareError) {
		t.Errorf("fit %+v: want all 40 runs, a weight below 1 and an error well below the MPS share rule's", f)
	}
	if f.BandwidthBound != 0 {
		t.Errorf("%d runs bound by bandwidth, want 0 (their DRAM use is below the slice's share)", f.BandwidthBound)
	}
}

// TestSliceSpeedInInstance: in a slice, a job at the slice's whole share
// runs at the slice's speed; less share, less speed; on the whole GPU the
// MPS curve is untouched; smaller slices are slower than an MPS share of
// the same SMs.
func TestSliceSpeedInInstance(t *testing.T) {
	tr := builtinJobModels(t).Truth
	const job = "resnet50_infer"
	c := 100 * 14.0 / 108
	slice := tr.inInstance(job, c, c)
	if math.Abs(slice-tr.sliceSpeed(job, c, tr.sliceW)) > 1e-12 {
		t.Errorf("whole slice %.4f, slice speed %.4f", slice, tr.sliceSpeed(job, c, tr.sliceW))
	}
	if half := tr.inInstance(job, c/2, c); !(half < slice) {
		t.Errorf("half the slice %.4f, whole slice %.4f: want less", half, slice)
	}
	if !(slice < tr.Alone(job, c)) {
		t.Errorf("1g slice %.4f, MPS at the same SMs %.4f: want the slice slower", slice, tr.Alone(job, c))
	}
	if got, want := tr.inInstance(job, 40, 100), tr.Alone(job, 40); got != want {
		t.Errorf("whole GPU at 40 %%: %.4f, MPS curve %.4f", got, want)
	}
}
