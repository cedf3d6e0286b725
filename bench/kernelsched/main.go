// Command kernelsched regenerates docs/results/kernelsched.md: the kernel
// scheduler's policies on pairs of real traces in the simulator, the
// calibration of the simulated GPU, and FIKIT's epsilon.
//
//	go run ./bench/kernelsched -o docs/results/kernelsched.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

var (
	hps = []string{"resnet50_infer_bs1", "resnet50_infer_bs32", "mobilenet_v2_infer_bs32", "fcn_resnet50_infer_bs1"}
	lps = []string{"vgg19_train_bs32", "resnet152_train_bs16", "densenet201_train_bs16", "bert_base_train_bs8"}
)

func main() {
	out := flag.String("o", "docs/results/kernelsched.md", "output file")
	duration := flag.Duration("duration", 10*time.Second, "simulated time per run")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*out, *duration, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "kernelsched:", err)
		os.Exit(1)
	}
}

// pairResult is one HP x LP pair under every policy.
type pairResult struct {
	hp, lp string
	rep    *sim.Report
}

// holds are the two hook behaviours compared: mmk's design first.
var holds = []sim.HoldMode{sim.HoldQueue, sim.HoldBlock}

func load(name string) (*trace.KernelTrace, error) { return trace.LoadKernelTrace(name, "") }

func pair(hp, lp *trace.KernelTrace) []sim.Task {
	return []sim.Task{
		{Name: "HP", Trace: hp, Priority: 0, Online: true, Arrival: sim.Closed, Think: 2 * time.Millisecond},
		{Name: "LP", Trace: lp, Priority: 5, Arrival: sim.BackToBack},
	}
}

func run(out string, duration time.Duration, seed uint64) error {
	start := time.Now()
	var b bytes.Buffer
	policies := kernelsched.Policies()
	gpu := sim.DefaultGPU()
	traces := map[string]*trace.KernelTrace{}
	for _, n := range append(append([]string{}, hps...), lps...) {
		t, err := load(n)
		if err != nil {
			return err
		}
		traces[n] = t
	}
	events := 0
	prog := progress.New(os.Stderr)
	report := func(what string) func(int, int, string) {
		return func(done, total int, name string) {
			prog.Updatef(done, total, "%-60s %d/%d %s", what, done, total, time.Since(start).Round(time.Second))
		}
	}
	exp := func(tasks []sim.Task, pols []string, sched kernelsched.Config, g sim.GPUConfig, hold sim.HoldMode, what string) (*sim.Report, error) {
		rep, err := sim.Experiment{Tasks: tasks, Policies: pols, Duration: duration, Seed: seed, Sched: sched, GPU: g, Hold: hold,
			Parallel: runtime.NumCPU(), Progress: report(what)}.Run()
		if err == nil {
			events += rep.Events
		}
		return rep, err
	}

	// Calibration: the fifo pair against the H200 measurements.
	var calib [][]string
	for _, c := range []struct{ slice, swtch time.Duration }{
		{1000, 25}, {1500, 25}, {1660, 25}, {1500, 100}, {gpu.Slice / time.Microsecond, gpu.Switch / time.Microsecond}, {2000, 100},
	} {
		g := gpu
		g.Slice, g.Switch = c.slice*time.Microsecond, c.swtch*time.Microsecond
		rep, err := exp(pair(traces["resnet50_infer_bs1"], traces["vgg19_train_bs32"]), []string{"fifo"}, kernelsched.Config{}, g, sim.HoldQueue, "calibration "+g.Slice.String()+" "+g.Switch.String())
		if err != nil {
			return err
		}
		hp, lp := rep.Results[0], rep.Results[1]
		name := g.Slice.String() + ", " + g.Switch.String()
		if g.Slice == gpu.Slice && g.Switch == gpu.Switch {
			name += " (default)"
		}
		calib = append(calib, []string{name, ms(rep.Alone[0].P50), f3(hp.P50Ms), f2(hp.SlowdownP50) + "x", f2(hp.SlowdownP99) + "x", pct(lp.ThroughputRPS * rep.Alone[1].Mean.Seconds())})
	}

	// The grid, for each hold mode.
	results := map[sim.HoldMode][]pairResult{}
	for _, h := range holds {
		for _, hp := range hps {
			for _, lp := range lps {
				rep, err := exp(pair(traces[hp], traces[lp]), policies, kernelsched.Config{}, gpu, h, string(h)+": "+hp+" + "+lp)
				if err != nil {
					return err
				}
				results[h] = append(results[h], pairResult{hp, lp, rep})
			}
		}
	}

	// Epsilon.
	var epsRows [][]string
	for _, eps := range []time.Duration{10, 25, 50, 100, 200, 500} {
		e := eps * time.Microsecond
		var worst50, worst99, sumKeep, minKeep float64
		minKeep = 1e9
		for _, hp := range hps {
			for _, lp := range lps {
				rep, err := exp(pair(traces[hp], traces[lp]), []string{"fifo", "fikit"}, kernelsched.Config{Epsilon: e}, gpu, sim.HoldQueue, "epsilon "+e.String()+" "+hp+" + "+lp)
				if err != nil {
					return err
				}
				fifoLP, fk := rep.Results[1], rep.Results[2:]
				worst50 = max(worst50, fk[0].SlowdownP50)
				worst99 = max(worst99, fk[0].SlowdownP99)
				keep := fk[1].ThroughputRPS / fifoLP.ThroughputRPS
				sumKeep += keep
				minKeep = min(minKeep, keep)
			}
		}
		n := float64(len(hps) * len(lps))
		epsRows = append(epsRows, []string{e.String(), f3(worst50) + "x", f3(worst99) + "x", pct(sumKeep / n), pct(minKeep)})
	}

	// MPS model: the contention-checked policies where kernels can overlap.
	var mpsRows [][]string
	mpsGPU := sim.GPUConfig{Model: sim.MPS, LaunchLatency: gpu.LaunchLatency}
	for _, hp := range hps {
		for _, lp := range lps {
			rep, err := exp(pair(traces[hp], traces[lp]), []string{"fifo", "fikit", "mmk", "fikit+mmk"}, kernelsched.Config{}, mpsGPU, sim.HoldQueue, "mps "+hp+" + "+lp)
			if err != nil {
				return err
			}
			fifoLP := rep.Results[1].ThroughputRPS
			for i := 0; i < len(rep.Results); i += 2 {
				h, l := rep.Results[i], rep.Results[i+1]
				mpsRows = append(mpsRows, []string{hp, lp, h.Policy, f2(h.SlowdownP50) + "x", f2(h.SlowdownP99) + "x", f2(l.ThroughputRPS), pct(l.ThroughputRPS / fifoLP), f2(rep.GPUBusy[h.Policy])})
			}
		}
	}

	write(&b, results, calib, epsRows, mpsRows, duration, seed, gpu, events, time.Since(start))
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s in %s\n", out, time.Since(start).Round(time.Second))
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
func f2(v float64) string       { return fmt.Sprintf("%.2f", v) }
func f3(v float64) string       { return fmt.Sprintf("%.3f", v) }
func pct(v float64) string      { return fmt.Sprintf("%.0f %%", 100*v) }

func table(b *bytes.Buffer, header []string, rows [][]string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r, " | "))
	}
	b.WriteString("\n")
}
