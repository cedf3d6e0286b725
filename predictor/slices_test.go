package predictor

import (
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestParseSliceRunsErrors: bad lines name what is wrong.
func TestParseSliceRunsErrors(t *testing.T) {
	m, err := partitioner.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"a,b\n", "wrong number of fields"},
		{"model,type,online,slice,secs\n", "want the header"},
		{"model,type,online,slice,seconds\nr,resnet50_infer,true,1g.10gb,1\n", "no baseline"},
		{"model,type,online,slice,seconds\nr,resnet50_infer,true,baseline,0\n", "seconds \"0\""},
		{"model,type,online,slice,seconds\nr,resnet50_infer,true,baseline,1\nr,resnet50_infer,true,9g.1gb,1\n", "9g.1gb"},
		{"model,type,online,slice,seconds\nr,x,true,baseline,1\nr,x,true,baseline,2\n", "second baseline"},
	} {
		if _, err := ParseSliceRuns(strings.NewReader(tc.in), m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestFitSlices: runs that scale with the slice's SMs (a GPU shrunk in
// every part) fit a weight below 1 with less error than the MPS share
// rule, and the fitted estimator answers lower in a slice than before,
// the same on the whole GPU.
func TestFitSlices(t *testing.T) {
	samples, m := smallForest(t)
	est := Estimator{Model: m, Profiles: Profiles(samples)}
	job := partitioner.Job{Type: "bert_train"}
	whole, err := est.Speed(job, 132, 132, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	var runs []SliceRun
	for _, sms := range []int{16, 32, 60, 64} {
		runs = append(runs, SliceRun{Type: "bert_train", SMs: sms, GPUSMs: 132, SMShare: float64(sms) / 132, Speed: whole * float64(sms) / 132})
	}
	before, err := est.Speed(job, 32, 132, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := est.FitSlices(runs)
	if err != nil {
		t.Fatal(err)
	}
	if f.Runs != 4 || !(f.W < 1) || !(f.MeanError < f.MPSShareError) || est.Slices == nil || est.Slices.W != f.W {
		t.Fatalf("fit %+v (estimator's %v): want a weight below 1 with less error", f, est.Slices)
	}
	after, err := est.Speed(job, 32, 132, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(after < before) {
		t.Errorf("32 SMs: %.4f after the fit, %.4f before: want lower", after, before)
	}
	if w2, _ := est.Speed(job, 132, 132, 100, nil); w2 != whole {
		t.Errorf("whole GPU: %.4f after the fit, %.4f before", w2, whole)
	}
}
