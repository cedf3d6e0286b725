package partitioner

import (
	"fmt"
	"testing"
)

// benchDecide times one Algorithm 1 decision placing 60 pending jobs (40
// online, 20 offline, 14 types) on gpus empty GPUs, layout search
// included, with a fresh estimator cache per decision.
func benchDecide(b *testing.B, gpus int) {
	m, err := LookupModel("A100-80GB")
	if err != nil {
		b.Fatal(err)
	}
	whole, err := ParseLayout(m, "7g.80gb")
	if err != nil {
		b.Fatal(err)
	}
	est := &curveEstimator{saturate: map[string]float64{}, interference: 0.1}
	var jobs []Job
	for i := range 60 {
		typ := fmt.Sprintf("t%d", i%14)
		est.saturate[typ] = float64(14 + 6*(i%14))
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%02d", i), Type: typ, Online: i%3 != 0, MemoryMiB: int64(1000 + 500*(i%14))})
	}
	req := Request{GPUs: make([]GPUPlan, gpus), Pending: jobs}
	for g := range req.GPUs {
		req.GPUs[g].Layout = whole
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decide(req, est, Options{FixOnlinePercent: true, MaxJobsPerInstance: 3}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecide60Jobs1GPU is one decision for 60 jobs on one GPU.
func BenchmarkDecide60Jobs1GPU(b *testing.B) { benchDecide(b, 1) }

// BenchmarkDecide60Jobs8GPUs is one decision for 60 jobs on 8 GPUs.
func BenchmarkDecide60Jobs8GPUs(b *testing.B) { benchDecide(b, 8) }
