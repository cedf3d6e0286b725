package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/predictor/profiling"
)

// TableIIIJobs are the job types of MMK Table III.
var TableIIIJobs = []string{
	"vgg16_infer", "mobilenet_infer", "resnet18_infer",
	"bert_train", "resnet152_train", "densenet201_train",
	"transformer_infer", "transformer_train", "densenet121_infer", "densenet121_train",
	"vgg19_infer", "vgg19_train", "resnet50_infer", "resnet50_train",
}

// profileFlags are the flags of `mmkctl profile`.
type profileFlags struct {
	out, python, script, mpsDir, jobs, percents string
	priorities, placements                      string
	seed                                        uint64
	pairs, triples, gpu, reps                   int
	warmup, measure, timeLimit                  time.Duration
	dryRun                                      bool
	// config chooses the GPU backend (--config, --backend).
	config *cli.Flags
}

func newProfileCommand() *cobra.Command {
	f := &profileFlags{}
	cmd := &cobra.Command{
		Use:   "profile --out FILE.csv",
		Short: "Run a profiling campaign on a real GPU under MPS (resumable)",
		Long: `Runs every job alone at each MPS percentage and in co-located groups of 2
and 3 under MPS, and appends one sample per job and run to a CSV (columns in
docs/predictor.md). Each run is measured --reps times, the repetitions
interleaved (every run once, then again in another order), so that the
data's noise floor can be measured. With --priorities mixed, half the drawn
groups run at the MPS client priorities mmkd gives (offline jobs at 1);
--placements adds the groups Algorithm 1 placed in simulation (a file of run
keys, one per line: mmkctl sim jobs --placements-out). It starts and quits its
own MPS control daemon, shows progress on stderr and, run again with the same
flags, resumes: runs already in the file are skipped. --time-limit stops
starting new runs after a while.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProfile(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "CSV file to write or resume (required)")
	fl.StringVar(&f.python, "python", "python3", "Python with PyTorch")
	fl.StringVar(&f.script, "script", "bench/workloads/workload.py", "the workload script")
	fl.StringVar(&f.jobs, "jobs", strings.Join(TableIIIJobs, ","), "job types")
	fl.StringVar(&f.percents, "percents", "10,20,30,40,50,60,70,80,90,100", "MPS percentages of the alone runs")
	fl.IntVar(&f.pairs, "pairs", 90, "co-located runs of 2 jobs")
	fl.IntVar(&f.triples, "triples", 100, "co-located runs of 3 jobs")
	fl.IntVar(&f.reps, "reps", 3, "repetitions of each run, interleaved")
	fl.StringVar(&f.priorities, "priorities", string(predictor.PrioritiesMixed), "client priorities of the drawn groups: none (all 0) or mixed (half as mmkd places them)")
	fl.StringVar(&f.placements, "placements", "", "file of run keys to measure first (one per line; # comments)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the co-located groups")
	fl.IntVar(&f.gpu, "gpu", 0, "GPU index")
	fl.DurationVar(&f.warmup, "warmup", time.Second, "warm-up of each workload")
	fl.DurationVar(&f.measure, "measure", 2*time.Second, "measured time of each workload")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "start no run after this long (0: no limit)")
	fl.StringVar(&f.mpsDir, "mps-dir", filepath.Join(os.TempDir(), "mmk-profile-mps"), "directory for the MPS daemon's pipe and log")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan and stop")
	f.config = addBackendFlags(cmd)
	cmd.MarkFlagRequired("out")
	return cmd
}

func runProfile(cmd *cobra.Command, f *profileFlags) error {
	jobs := splitList(f.jobs)
	if len(jobs) == 0 {
		return fmt.Errorf("flag --jobs: no job")
	}
	percents, err := parsePercents("percents", f.percents)
	if err != nil {
		return err
	}
	if f.pairs < 0 || f.triples < 0 {
		return fmt.Errorf("flags --pairs and --triples: %d and %d must not be negative", f.pairs, f.triples)
	}
	if f.reps < 1 {
		return fmt.Errorf("flag --reps: %d must be at least 1", f.reps)
	}
	var placements []predictor.Run
	if f.placements != "" {
		var err error
		if placements, err = readRunKeys(f.placements); err != nil {
			return fmt.Errorf("flag --placements: %w", err)
		}
	}
	if f.warmup <= 0 || f.measure <= 0 {
		return fmt.Errorf("flags --warmup and --measure: %v and %v must be positive", f.warmup, f.measure)
	}
	runs, err := predictor.Plan(predictor.PlanSpec{Jobs: jobs, AlonePercents: percents, Pairs: f.pairs, Triples: f.triples, Seed: f.seed,
		Priorities: predictor.Priorities(f.priorities), Placements: placements})
	if err != nil {
		return err
	}
	steps := predictor.Steps(runs, f.reps, f.seed)
	stderr := cmd.ErrOrStderr()
	if f.dryRun {
		samples := 0
		for _, st := range steps {
			samples += len(st.Run)
			fmt.Fprintln(cmd.OutOrStdout(), st.ID())
		}
		fmt.Fprintf(stderr, "%d configurations, %d runs with repetitions, %d samples\n", len(runs), len(steps), samples)
		return nil
	}
	backend, err := openBackend(f.config)
	if err != nil {
		return err
	}
	gpus, err := backend.GPUs()
	backend.Close()
	if err != nil {
		return err
	}
	if f.gpu < 0 || f.gpu >= len(gpus) {
		return fmt.Errorf("flag --gpu: %d is not one of the %d GPUs", f.gpu, len(gpus))
	}
	g := gpus[f.gpu]
	meter, err := profiling.NewNVMLMeter(nvml.New(), f.gpu)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer meter.Close()
	if meter.Warning != "" {
		fmt.Fprintln(stderr, "profile:", meter.Warning)
	}
	// CUDA numbers GPUs fastest first, NVML by PCI bus: name the GPU by
	// UUID so MPS runs where the meter looks.
	device := g.UUID
	if device == "" {
		device = strconv.Itoa(f.gpu)
	}
	d := &mps.Daemon{PipeDir: filepath.Join(f.mpsDir, "pipe"), LogDir: filepath.Join(f.mpsDir, "log"), Device: device}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := d.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if err := d.Quit(cmd.Context()); err != nil {
			fmt.Fprintln(stderr, "profile:", err)
		}
	}()
	cfg := profiling.Config{
		Python: f.python, Script: f.script, Warmup: f.warmup, Measure: f.measure, Steps: steps, Out: f.out,
		Header: predictor.Header{"gpu": g.Name, "driver": meter.DriverVersion(), "date": time.Now().UTC().Format("2006-01-02"),
			"instance_sms": strconv.Itoa(g.SMs), "mig": "disabled (whole GPU)", "command": "mmkctl " + strings.Join(os.Args[1:], " ")},
		HeaderKeys: []string{"gpu", "driver", "date", "instance_sms", "mig", "command"},
		ClientEnv: func(m predictor.Member) []string {
			return append(d.ClientEnv(m.Percent), mps.PriorityEnv+"="+strconv.Itoa(m.Priority))
		},
		SMs: g.SMs, Meter: meter, Log: stderr,
	}
	if f.timeLimit > 0 {
		cfg.Deadline = time.Now().Add(f.timeLimit)
	}
	res, err := profiling.Collect(ctx, cfg)
	fmt.Fprintf(stderr, "profile: %d runs done now, %d before, %d failed, %d left (run again to resume)\n", res.Done, res.AlreadyDone, res.Failed, res.Left)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parsePercents reads flag --name's comma-separated percentages, each
// 1..100.
func parsePercents(name, s string) ([]int, error) {
	var out []int
	for _, v := range splitList(s) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("flag --%s: %q is not a percentage 1..100", name, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// readRunKeys reads run keys, one per line; blank lines and lines
// starting with # are skipped. A bad key names its line.
func readRunKeys(path string) ([]predictor.Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var runs []predictor.Run
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := predictor.ParseRunKey(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}
