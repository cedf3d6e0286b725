package sim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// Experiment runs the same tasks under several policies and compares each
// task with itself alone.
type Experiment struct {
	Tasks           []Task
	Policies        []string
	Duration        time.Duration
	Seed            uint64
	Sched           kernelsched.Config
	GPU             GPUConfig
	DecisionLatency time.Duration
	Hold            HoldMode
	// Timeline records kernel spans in this window for every policy.
	Timeline Window
	// Parallel is how many simulations run at once (0: 1).
	Parallel int
	// Progress, when set, is called with each finished simulation's name.
	Progress func(done, total int, name string)
}

// Row is one task under one policy.
type Row struct {
	Policy        string  `json:"policy"`
	Task          string  `json:"task"`
	Requests      int     `json:"requests"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	SlowdownP50   float64 `json:"slowdown_p50"`
	SlowdownP99   float64 `json:"slowdown_p99"`
	ThroughputRPS float64 `json:"throughput_rps"`
}

// Report is an experiment's outcome. Results are ordered by policy, then
// task, as given.
type Report struct {
	Results []Row              `json:"results"`
	GPUBusy map[string]float64 `json:"gpu_busy"`
	// Alone is each task by itself (fifo, no other task).
	Alone []TaskResult `json:"-"`
	// Spans are the timeline's kernels by policy.
	Spans map[string][]Span `json:"-"`
	// Events is the kernel events simulated in all runs.
	Events int `json:"-"`
}

// Run calibrates host scales that are 0, simulates every task alone and
// then all tasks under each policy.
func (e Experiment) Run() (*Report, error) {
	if len(e.Tasks) == 0 || len(e.Policies) == 0 {
		return nil, errors.New("experiment: need at least one task and one policy")
	}
	tasks := append([]Task(nil), e.Tasks...)
	for i := range tasks {
		if tasks[i].HostScale == 0 {
			sc, err := CalibrateHostScale(tasks[i].Trace, e.GPU, e.Sched)
			if err != nil {
				return nil, fmt.Errorf("experiment: calibrate task %q: %w", tasks[i].Name, err)
			}
			tasks[i].HostScale = sc
		}
		if tasks[i].Profile == nil {
			p, err := ProfileAlone(tasks[i], e.GPU, e.Sched, 2*len(tasks[i].Trace.Iterations))
			if err != nil {
				return nil, fmt.Errorf("experiment: %w", err)
			}
			tasks[i].Profile = p
		}
	}
	base := Config{Duration: e.Duration, Seed: e.Seed, Sched: e.Sched, GPU: e.GPU, DecisionLatency: e.DecisionLatency, Hold: e.Hold}
	var jobs []Config
	for _, t := range tasks {
		c := base
		c.Policy, c.Tasks = "fifo", []Task{t}
		jobs = append(jobs, c)
	}
	for _, p := range e.Policies {
		c := base
		c.Policy, c.Tasks, c.Timeline = p, tasks, e.Timeline
		jobs = append(jobs, c)
	}
	results, err := runAll(jobs, max(1, e.Parallel), func(done int, c Config) {
		if e.Progress != nil {
			name := c.Policy
			if len(c.Tasks) == 1 && len(tasks) > 1 {
				name = c.Tasks[0].Name + " alone"
			}
			e.Progress(done, len(jobs), name)
		}
	})
	if err != nil {
		return nil, err
	}
	rep := &Report{GPUBusy: map[string]float64{}, Spans: map[string][]Span{}}
	for i := range tasks {
		rep.Alone = append(rep.Alone, results[i].Tasks[0])
		rep.Events += results[i].Events
	}
	for j, p := range e.Policies {
		r := results[len(tasks)+j]
		rep.GPUBusy[p] = r.GPUBusy
		rep.Spans[p] = r.Spans
		rep.Events += r.Events
		for i, tr := range r.Tasks {
			a := rep.Alone[i]
			rep.Results = append(rep.Results, Row{
				Policy: p, Task: tr.Name, Requests: tr.Requests,
				P50Ms: ms(tr.P50), P99Ms: ms(tr.P99),
				SlowdownP50: ratio(tr.P50, a.P50), SlowdownP99: ratio(tr.P99, a.P99),
				ThroughputRPS: tr.PerSecond,
			})
		}
	}
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func ratio(a, b time.Duration) float64 {
	if b <= 0 || a <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// runAll runs simulations, at most parallel at once, keeping their order.
func runAll(jobs []Config, parallel int, done func(int, Config)) ([]*Result, error) {
	out := make([]*Result, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	finished := 0
	var wg sync.WaitGroup
	for i, c := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = Simulate(c)
			mu.Lock()
			finished++
			done(finished, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
