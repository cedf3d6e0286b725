package jobsim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

// TestRatioTargetIsAgainstItsOwnAlone: a ratio objective is a multiple
// of the service's latency at its percentile alone, queueing at its own
// load included (what mmkd measures alone): a service alone on a GPU
// holds p99=1x, and with a trainer beside it under plain MPS it does not;
// an absolute bound below one request alone is never held.
func TestRatioTargetIsAgainstItsOwnAlone(t *testing.T) {
	svc := func(target string) trace.SimJob {
		j := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: 10 * time.Minute, Load: 0.3, MemoryMiB: 1246}
		if target != "" {
			j.SLO = slo.MustParse(target)
		}
		return j
	}
	trainer := trace.SimJob{ID: "t", Type: "vgg19_train", Work: 20 * time.Minute, MemoryMiB: 9000}
	lat := builtinJobModels(t).Truth.LatencyMs("resnet50_infer")
	for _, tc := range []struct {
		name   string
		policy string
		jobs   []trace.SimJob
		held   bool
	}{
		{"alone p99=1x", JobMPS, []trace.SimJob{svc("p99=1x")}, true},
		{"alone p50=1x", JobMPS, []trace.SimJob{svc("p50=1x")}, true},
		{"beside a trainer p99=1x", JobMPS, []trace.SimJob{svc("p99=1x"), trainer}, false},
		{"beside a trainer p99=50x", JobMPS, []trace.SimJob{svc("p99=50x"), trainer}, true},
		{"alone, bound below a request", JobMPS, []trace.SimJob{svc("p99=" + time.Duration(lat*0.9*float64(time.Millisecond)).String())}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Simulate(config(t, tc.policy, 1, tc.jobs...))
			if err != nil {
				t.Fatal(err)
			}
			if r.Services != 1 || (r.ServicesMet == 1) != tc.held {
				t.Errorf("%d of %d services held (attainment %.4f), want held %v", r.ServicesMet, r.Services, r.SLOAttainment, tc.held)
			}
			k := tc.jobs[0].SLO.String()
			if st := r.ByTarget[k]; st == nil || st.Services != 1 || st.SLOAttainment != r.SLOAttainment {
				t.Errorf("by target %q: %+v, want the one service at %.4f", k, st, r.SLOAttainment)
			}
		})
	}
}

// TestDefaultTargetIsPerRequest: services without an objective are held
// to Config.SLOFactor times one request alone at p99, counted under
// DefaultTarget; the attainment is the M/D/1 queue's.
func TestDefaultTargetIsPerRequest(t *testing.T) {
	job := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: 30 * time.Minute, Load: 0.4, MemoryMiB: 1246}
	cfg := config(t, JobMPS, 1, job)
	cfg.SLOFactor = 1.5
	r, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := md1WaitCDF(0.4, 0.5)
	if math.Abs(r.SLOAttainment-want) > 0.01 {
		t.Errorf("attainment %.4f, want %.4f (M/D/1 at load 0.4 within 1.5 service times)", r.SLOAttainment, want)
	}
	st := r.ByTarget[DefaultTarget]
	if st == nil || st.Services != 1 || st.Met != 0 || r.ServicesMet != 0 {
		t.Errorf("default target: %+v, %d met: want one service, missed (%.2f < 0.99)", st, r.ServicesMet, want)
	}
}

// TestTargetsPerClass: a workload whose services draw their objectives
// reports each class apart, the classes adding up to the whole.
func TestTargetsPerClass(t *testing.T) {
	jobs := mustSynthetic(t, 12, 6, 2)
	targets := []slo.Target{slo.MustParse("p99=1.25x"), slo.MustParse("p99=5x")}
	trace.AssignSLOs(jobs, targets, 2)
	r, err := Simulate(config(t, JobMPSPrio, 1, jobs...))
	if err != nil {
		t.Fatal(err)
	}
	n, met, req := 0, 0, 0.0
	for _, tg := range targets {
		st := r.ByTarget[tg.String()]
		if st == nil {
			t.Fatalf("no class %v in %v", tg, r.ByTarget)
		}
		n, met, req = n+st.Services, met+st.Met, req+st.Requests.Requests
	}
	if n != r.Services || met != r.ServicesMet || req != r.Requests.Requests || len(r.ByTarget) != len(targets) {
		t.Errorf("classes add to %d services, %d met, %.0f requests; whole %d, %d, %.0f", n, met, req, r.Services, r.ServicesMet, r.Requests.Requests)
	}
	loose, tight := r.ByTarget["p99=5x"], r.ByTarget["p99=1.25x"]
	if !(loose.SLOAttainment >= tight.SLOAttainment) {
		t.Errorf("attainment %.4f at 5x, %.4f at 1.25x: want the looser at least as high", loose.SLOAttainment, tight.SLOAttainment)
	}
}

// TestBadTargetIsNamed: a target without a bound is refused, naming the
// job.
func TestBadTargetIsNamed(t *testing.T) {
	job := trace.SimJob{ID: "svc7", Type: "resnet50_infer", Online: true, Work: time.Minute, Load: 0.1, MemoryMiB: 1, SLO: slo.Target{Percentile: 99}}
	_, err := Simulate(config(t, JobMPS, 1, job))
	if err == nil || !strings.Contains(err.Error(), "svc7") || !strings.Contains(err.Error(), "latency target") {
		t.Errorf("error %v, want one naming svc7's latency target", err)
	}
}

// TestPerServiceOverAlone: a service alone is at 1x its alone latency at
// every percentile; beside a trainer under plain MPS it is slower, more
// at p99 than nothing.
func TestPerServiceOverAlone(t *testing.T) {
	svc := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: 10 * time.Minute, Load: 0.3, MemoryMiB: 1246}
	trainer := trace.SimJob{ID: "t", Type: "vgg19_train", Work: 20 * time.Minute, MemoryMiB: 9000}
	for _, tc := range []struct {
		name     string
		jobs     []trace.SimJob
		min, max float64
	}{
		{"alone", []trace.SimJob{svc}, 0.98, 1.02},
		{"beside a trainer", []trace.SimJob{svc, trainer}, 1.2, math.Inf(1)},
	} {
		r, err := Simulate(config(t, JobMPS, 1, tc.jobs...))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.PerService) != 1 {
			t.Fatalf("%s: %d services", tc.name, len(r.PerService))
		}
		s := r.PerService[0]
		if s.ID != "s" || s.Target != DefaultTarget || s.P50 < tc.min || s.P50 > tc.max || s.P99 < tc.min || s.P99 > tc.max {
			t.Errorf("%s: %+v, want p50 and p99 over alone in [%g, %g]", tc.name, s, tc.min, tc.max)
		}
	}
}
