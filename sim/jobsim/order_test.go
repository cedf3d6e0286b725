package jobsim

import (
	"fmt"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

// congested is one GPU's worth of the congested case: a job holding
// most of the GPU's memory runs, a small job arrives that does not fit
// beside it, and more jobs as large as the first keep arriving, each
// before the one ahead of it ends.
func congested() []trace.SimJob {
	jobs := []trace.SimJob{{ID: "small", Type: "resnet50_train", Arrival: 10 * time.Second, Work: 5 * time.Minute, MemoryMiB: 15000}}
	for i := range 8 {
		jobs = append(jobs, trace.SimJob{ID: fmt.Sprintf("big%d", i), Type: "vgg19_train", Arrival: time.Duration(i) * 5 * time.Minute, Work: 6 * time.Minute, MemoryMiB: 70000})
	}
	return jobs
}

// TestPlacementOrderCannotStarve: on the congested shape the small job
// waits for one large job under mmk (first come first served where both
// fit, as under mps-prio) and mmk's mean JCT is within 1.1x of
// mps-prio's; placing the largest memory first (Algorithm 1's line 1)
// keeps it waiting behind every large job that arrives after it.
func TestPlacementOrderCannotStarve(t *testing.T) {
	h100, err := partitioner.LookupModel("H100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	run := func(policy string) (*Result, float64) {
		cfg := config(t, policy, 1, congested()...)
		cfg.Model = h100
		s, err := newSim(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		small := s.byID["small"]
		return &s.res, small.started - small.Arrival.Seconds()
	}
	base, baseWait := run(JobMPSPrio)
	mmk, mmkWait := run(JobMMK)
	largest, largestWait := run(JobMMK + "-" + OptArrivalOrder)
	t.Logf("small job's wait: mps-prio %.0f s, mmk %.0f s, largest first %.0f s; mean JCT %.0f, %.0f, %.0f s", baseWait, mmkWait, largestWait, base.AvgJCTS, mmk.AvgJCTS, largest.AvgJCTS)
	if mmkWait > 400 {
		t.Errorf("under mmk the small job waited %.0f s: want at most one large job's run", mmkWait)
	}
	if largestWait < 4*mmkWait {
		t.Errorf("largest first: the small job waited %.0f s, under mmk %.0f s: want it kept behind later large jobs", largestWait, mmkWait)
	}
	if mmk.AvgJCTS > 1.1*base.AvgJCTS {
		t.Errorf("mmk's mean JCT %.0f s is %.2fx mps-prio's %.0f s: want at most 1.1x", mmk.AvgJCTS, mmk.AvgJCTS/base.AvgJCTS, base.AvgJCTS)
	}
}

// TestSLOMaxWait: a service whose own target no place holds (the one GPU
// is busy with a service it cannot sit beside) waits SLOMaxWait and is
// then placed; waiting as long as it takes, it starts only when the
// first service ends. (The first service's loose target leaves room for
// the second: a need of a running service still keeps others out.)
func TestSLOMaxWait(t *testing.T) {
	h100, err := partitioner.LookupModel("H100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	first := trace.SimJob{ID: "first", Type: "resnet50_infer", Online: true, Work: 10 * time.Minute, Load: 0.25, MemoryMiB: 1246, SLO: slo.MustParse("p99=50x")}
	second := trace.SimJob{ID: "second", Type: "vgg16_infer", Online: true, Arrival: 30 * time.Second, Work: 5 * time.Minute, Load: 0.25, MemoryMiB: 3606, SLO: slo.MustParse("p99=1.1x")}
	waited := func(w time.Duration) float64 {
		cfg := config(t, JobMMK, 1, first, second)
		cfg.Model, cfg.SLOMaxWait = h100, w
		s, err := newSim(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		j := s.byID["second"]
		return j.started - j.Arrival.Seconds()
	}
	bounded, forever := waited(time.Minute), waited(-1)
	if bounded < 59 || bounded > 61 {
		t.Errorf("with a minute's wait the second service started after %.1f s, want 60", bounded)
	}
	if forever < 500 {
		t.Errorf("waiting as long as it takes it started after %.1f s, want after the first service's 10 minutes", forever)
	}
}
