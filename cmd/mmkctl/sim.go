package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

func newSimCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate scheduling on real traces",
	}
	cmd.AddCommand(newSimKernelsCommand(a), newSimJobsCommand(a), newSimSLOCommand(a))
	return cmd
}

// simKernelsFlags are the flags of `mmkctl sim kernels`.
type simKernelsFlags struct {
	tasks           []string
	policies        string
	duration        time.Duration
	seed            uint64
	traces          string
	timeline        string
	window          string
	gpuModel        string
	residency       bool
	dispatchWait    time.Duration
	shareStretch    bool
	hold            string
	slice, swtch    time.Duration
	launchLatency   time.Duration
	decisionLatency time.Duration
	sms             int
	epsilon         time.Duration
	inflight        int
	parallel        int
}

func newSimKernelsCommand(a *app) *cobra.Command {
	f := &simKernelsFlags{}
	gpu := sim.DefaultGPU()
	cmd := &cobra.Command{
		Use:   "kernels --task NAME:TRACE:PRIORITY[:think=2ms] ... --policy fikit,fifo",
		Short: "Replay kernel traces of several tasks on one simulated GPU instance under each policy",
		Long: `Replays kernel traces on one simulated GPU instance through mmk's kernel
scheduler and prints, per policy and task: requests done, latency p50/p99,
slowdown against the task alone, throughput, and the GPU's busy fraction.

TRACE is a trace file or the name of one in --traces or the built-in traces
(` + strings.Join(trace.BuiltinNames(), ", ") + `).
Task options: think=DURATION (closed loop), rate=R (Poisson requests/s),
b2b (back to back, the default), mps=PERCENT, scale=FACTOR (host time
between launches; default calibrated to the unprofiled iteration time),
online or offline (default: online at priority 0).`,
		Example: `  mmkctl sim kernels --task hp:resnet50_infer_bs1:0:think=2ms --task lp:vgg19_train_bs32:5 --policy fifo,fikit`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimKernels(a, cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.tasks, "task", nil, "a task NAME:TRACE:PRIORITY[:OPTION...] (repeat)")
	fl.StringVar(&f.policies, "policy", "fifo,fikit", "policies, comma-separated: "+strings.Join(kernelsched.Policies(), ","))
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "simulated time per run")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed (start offsets, Poisson arrivals)")
	fl.StringVar(&f.traces, "traces", os.Getenv("MMK_TRACES"), "directory of traces named by TRACE (default $MMK_TRACES; then the built-in ones)")
	fl.StringVar(&f.timeline, "timeline", "", "write an SVG timeline of the kernels to this file")
	fl.StringVar(&f.window, "timeline-window", "1s+20ms", "the timeline's window START+LENGTH")
	fl.StringVar(&f.gpuModel, "gpu", string(gpu.Model), "GPU model: timesliced (processes share by time slices) or mps (concurrent)")
	fl.StringVar(&f.hold, "hold", string(sim.HoldQueue), "what a held launch does: queue (the hook queues it in stream order and the call returns) or block (the call waits)")
	fl.DurationVar(&f.slice, "slice", gpu.Slice, "timesliced: time slice of a context while others wait")
	fl.DurationVar(&f.swtch, "switch", gpu.Switch, "timesliced: context switch cost")
	fl.DurationVar(&f.launchLatency, "launch-latency", gpu.LaunchLatency, "from launch call to kernel start")
	fl.BoolVar(&f.residency, "block-residency", false, "mps: resident blocks finish their wave before their SMs go to another kernel")
	fl.DurationVar(&f.dispatchWait, "dispatch-wait", 0, "mps: how long a kernel waits for SMs while a kernel of the same or a higher MPS priority runs (80us fits MPS without priority on an H100)")
	fl.BoolVar(&f.shareStretch, "share-stretch", false, "mps: a kernel held to its MPS share runs more waves (longer)")
	fl.DurationVar(&f.decisionLatency, "decision-latency", 0, "added to each launch that goes through the scheduler (all policies but fifo)")
	fl.IntVar(&f.sms, "sms", kernelsched.DefaultConfig().SMs, "SMs of the GPU instance")
	fl.DurationVar(&f.epsilon, "epsilon", kernelsched.DefaultConfig().Epsilon, "fikit: shortest gap filled")
	fl.IntVar(&f.inflight, "inflight", kernelsched.DefaultConfig().Inflight, "released kernels a preemptible task may have")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "simulations run at once")
	a.addOutputFlag(cmd)
	return cmd
}

func runSimKernels(a *app, cmd *cobra.Command, f *simKernelsFlags) error {
	if len(f.tasks) == 0 {
		return fmt.Errorf("flag --task: give at least one task")
	}
	policies, err := kernelsched.ParsePolicies(f.policies)
	if err != nil {
		return fmt.Errorf("flag --policy: %w", err)
	}
	if f.duration <= 0 {
		return fmt.Errorf("flag --duration: %v must be positive", f.duration)
	}
	if f.parallel < 1 {
		return fmt.Errorf("flag --parallel: %d must be at least 1", f.parallel)
	}
	// Zero fields of the scheduler's configuration mean "the default".
	if f.epsilon <= 0 {
		return fmt.Errorf("flag --epsilon: %v must be positive (to fill every gap, give 1ns)", f.epsilon)
	}
	if f.inflight < 1 {
		return fmt.Errorf("flag --inflight: %d must be at least 1", f.inflight)
	}
	if f.sms < 1 {
		return fmt.Errorf("flag --sms: %d must be at least 1", f.sms)
	}
	e := sim.Experiment{
		Policies: policies, Duration: f.duration, Seed: f.seed, Parallel: f.parallel,
		Sched: kernelsched.Config{SMs: f.sms, Epsilon: f.epsilon, Inflight: f.inflight},
		GPU: sim.GPUConfig{Model: sim.GPUModel(f.gpuModel), Slice: f.slice, Switch: f.swtch, LaunchLatency: f.launchLatency,
			BlockResidency: f.residency, DispatchWait: f.dispatchWait, ShareStretch: f.shareStretch},
		DecisionLatency: f.decisionLatency,
		Hold:            sim.HoldMode(f.hold),
	}
	var names []string
	for _, v := range f.tasks {
		spec, err := sim.ParseTaskSpec(v)
		if err != nil {
			return fmt.Errorf("flag --task: %w", err)
		}
		tr, err := trace.LoadKernelTrace(spec.Trace, f.traces)
		if err != nil {
			return fmt.Errorf("flag --task %s: %w", spec.Name, err)
		}
		st := spec.Task
		st.Trace = tr
		e.Tasks = append(e.Tasks, st)
		names = append(names, st.Name)
	}
	if f.timeline != "" {
		w, err := parseWindow(f.window)
		if err != nil {
			return fmt.Errorf("flag --timeline-window: %w", err)
		}
		e.Timeline = w
	}
	prog, start := progress.New(cmd.ErrOrStderr()), time.Now()
	e.Progress = func(done, total int, name string) {
		prog.Updatef(done, total, "simulated %d/%d (%s, %s)", done, total, name, time.Since(start).Round(time.Second))
	}
	rep, err := e.Run()
	prog.End()
	if err != nil {
		return err
	}
	if f.timeline != "" {
		if err := writeTimeline(f.timeline, names, e.Timeline, policies, rep); err != nil {
			return err
		}
	}
	p := a.printer(cmd)
	if p.json {
		return p.JSON(rep)
	}
	rows := make([][]string, 0, len(rep.Results))
	for _, r := range rep.Results {
		rows = append(rows, []string{r.Policy, r.Task, fmt.Sprint(r.Requests),
			fmt.Sprintf("%.3f", r.P50Ms), fmt.Sprintf("%.3f", r.P99Ms),
			fmt.Sprintf("%.2fx", r.SlowdownP50), fmt.Sprintf("%.2fx", r.SlowdownP99),
			fmt.Sprintf("%.2f", r.ThroughputRPS), fmt.Sprintf("%.2f", rep.GPUBusy[r.Policy])})
	}
	return p.Table("", []string{"POLICY", "TASK", "REQUESTS", "P50_MS", "P99_MS", "SLOWDOWN_P50", "SLOWDOWN_P99", "REQ/S", "GPU_BUSY"}, rows)
}

// parseWindow parses START+LENGTH, e.g. 1s+20ms.
func parseWindow(v string) (sim.Window, error) {
	a, b, ok := strings.Cut(v, "+")
	if !ok {
		return sim.Window{}, fmt.Errorf("%q: want START+LENGTH like 1s+20ms", v)
	}
	from, err := time.ParseDuration(a)
	if err != nil || from < 0 {
		return sim.Window{}, fmt.Errorf("%q: START %q is not a duration >= 0", v, a)
	}
	length, err := time.ParseDuration(b)
	if err != nil || length <= 0 {
		return sim.Window{}, fmt.Errorf("%q: LENGTH %q is not a positive duration", v, b)
	}
	return sim.Window{From: from, To: from + length}, nil
}

func writeTimeline(path string, names []string, w sim.Window, policies []string, rep *sim.Report) error {
	panels := make([]sim.TimelinePanel, 0, len(policies))
	for _, p := range policies {
		panels = append(panels, sim.TimelinePanel{Policy: p, Spans: rep.Spans[p]})
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("flag --timeline: %w", err)
	}
	if err := sim.WriteTimelineSVG(f, names, w, panels); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("flag --timeline: %w", err)
	}
	return nil
}
