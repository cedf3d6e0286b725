package trace

import (
	"slices"
	"testing"
)

// TestVariantTypes: a variant outside Table III is found by name and has
// its built-in kernel trace, but is not among the Table III types the
// workload generators draw from.
func TestVariantTypes(t *testing.T) {
	jt, ok := LookupJobType(Resnet50Batch1)
	if !ok || !jt.Online || jt.Trace != Resnet50Batch1 {
		t.Fatalf("LookupJobType(%q) = %+v, %v: want an online type with its own trace", Resnet50Batch1, jt, ok)
	}
	if _, err := LoadKernelTrace(jt.Trace, ""); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(JobTypes(), func(t JobType) bool { return t.Name == Resnet50Batch1 }) {
		t.Errorf("JobTypes() lists %s: the generators would draw it", Resnet50Batch1)
	}
	if slices.Contains(JobTraceOnline(), Resnet50Batch1) {
		t.Errorf("JobTraceOnline() lists %s", Resnet50Batch1)
	}
	jobs, err := SyntheticJobs(Synthetic{Online: 400, Offline: 200, GPUs: 8, Load: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Type == Resnet50Batch1 {
			t.Fatalf("the synthetic workload drew %s", j.Type)
		}
	}
}
