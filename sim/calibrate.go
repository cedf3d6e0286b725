package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/trace"
)

// CalibrateHostScale returns the factor for the trace's host time between
// launch calls that makes one iteration, simulated alone on gpu, take the
// iteration time measured without the profiler (trace.IterTime). The
// profiler widens host gaps (resnet50 bs=1: 6.16 ms per profiled
// iteration, 3.30 ms without), which matters for launch-bound workloads.
// It returns 1 when the iteration time is unknown, or when the GPU, not
// the host, sets the pace (then no factor reaches it).
func CalibrateHostScale(t *trace.KernelTrace, gpu GPUConfig, sched kernelsched.Config) (float64, error) {
	if t.IterTime <= 0 {
		return 1, nil
	}
	mean := func(scale float64) (time.Duration, error) {
		n := len(t.Iterations)
		res, err := Simulate(Config{
			Policy: "fifo", Duration: time.Hour, GPU: gpu, Sched: sched, stopAfter: n,
			Tasks: []Task{{Name: t.Name, Trace: t, Arrival: BackToBack, HostScale: scale}},
		})
		if err != nil {
			return 0, err
		}
		return res.Tasks[0].Mean, nil
	}
	hi, err := mean(1)
	if err != nil {
		return 0, err
	}
	if hi <= t.IterTime*102/100 {
		return 1, nil
	}
	l, h := 0.01, 1.0
	if low, err := mean(l); err != nil {
		return 0, err
	} else if low >= t.IterTime {
		return 1, nil
	}
	// Bisect: mean(l) stays below the target, mean(h) above it.
	for range 30 {
		mid := (l + h) / 2
		m, err := mean(mid)
		if err != nil {
			return 0, err
		}
		if m > t.IterTime {
			h = mid
		} else {
			l = mid
		}
	}
	return l, nil
}

// ProfileAlone is mmk's profiling phase in simulation: it runs the task
// alone (no scheduler, back to back) for runs requests and builds its
// kernel profile from what it observed, so SK and SG reflect the task as
// it runs here (its host scale included), not the profiler's timeline.
func ProfileAlone(t Task, gpu GPUConfig, sched kernelsched.Config, runs int) (*kernelsched.TaskProfile, error) {
	if runs < 1 {
		return nil, fmt.Errorf("profile %q: runs %d must be at least 1", t.Name, runs)
	}
	t.Arrival, t.Profile = BackToBack, nil
	res, err := Simulate(Config{
		Policy: "fifo", Duration: time.Hour, GPU: gpu, Sched: sched, stopAfter: runs, observe: true,
		Tasks: []Task{t},
	})
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", t.Name, err)
	}
	b := kernelsched.NewProfileBuilder(t.Trace.Name)
	for _, run := range res.runs {
		slices.SortStableFunc(run, func(a, b kernelsched.Observation) int { return cmp.Compare(a.Start, b.Start) })
		if err := b.AddRun(run); err != nil {
			return nil, fmt.Errorf("profile %q: %w", t.Name, err)
		}
	}
	return b.Profile(), nil
}
