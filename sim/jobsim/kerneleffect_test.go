package jobsim

import (
	"math"
	"testing"

	"github.com/mmkgpu/mmk/trace"
)

// TestKernelEffectsTable: the built-in table covers every pair of an
// online and an offline job trace with sane ratios, and (unless -short)
// one pair re-measured now matches it: the table is not stale.
func TestKernelEffectsTable(t *testing.T) {
	effects, err := KernelEffects()
	if err != nil {
		t.Fatal(err)
	}
	have := map[[2]string]KernelEffect{}
	for _, e := range effects {
		if !(e.OnlineSpeedup > 0 && e.OfflineKept > 0 && e.OfflineKept <= 1.05) {
			t.Errorf("implausible effect %+v", e)
		}
		have[[2]string{e.Online, e.Offline}] = e
	}
	for _, on := range trace.JobTraceOnline() {
		for _, off := range trace.JobTraceOffline() {
			if _, ok := have[[2]string{on, off}]; !ok {
				t.Errorf("no effect for %s + %s: run make kernel-effects", on, off)
			}
		}
	}
	if testing.Short() {
		return
	}
	want := have[[2]string{"resnet18_infer_bs32", "resnet50_train_bs32"}]
	got, err := MeasureKernelEffect(want.Online, want.Offline, want.Policy, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.OnlineSpeedup-want.OnlineSpeedup) > 1e-9 || math.Abs(got.OfflineKept-want.OfflineKept) > 1e-9 {
		t.Errorf("re-measured %+v, table %+v: run make kernel-effects", got, want)
	}
}
