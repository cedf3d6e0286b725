package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
	"github.com/mmkgpu/mmk/trace"
)

// simJobsFlags are the flags of `mmkctl sim jobs`.
type simJobsFlags struct {
	workload    string
	gpuModel    string
	gpus        int
	policies    string
	seed        uint64
	traces      string
	plot        string
	migReconfig time.Duration
	maxShare    int
}

func newSimJobsCommand(a *app) *cobra.Command {
	f := &simJobsFlags{}
	cmd := &cobra.Command{
		Use:   "jobs --workload testbed|large|openb[:N] --gpus N --policy default,mps,miso,miger,mmk",
		Short: "Replay a job trace on simulated GPUs under each partition policy",
		Long: `Replays a job trace on simulated GPUs under each job-level policy and
prints the average job completion time, the makespan, the system
throughput (sum over jobs of time alone / completion time), MIG
reconfigurations and job restarts.

Workloads: testbed (40 online + 20 offline MMK Table III jobs, Poisson
arrivals every 40 s on average), large (800 + 400), openb[:N] (the first N
single-GPU tasks of the Alibaba openb trace in --traces).
Policies: ` + strings.Join(jobsim.Policies(), ", ") + `.
Job speeds come from the built-in H200 profiles (ground truth); policies
decide with the random-forest predictor trained on the same data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimJobs(a, cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "testbed", "job trace: testbed, large or openb[:N]")
	fl.StringVar(&f.gpuModel, "gpu-model", "A100-80GB", "GPU model ("+strings.Join(partitioner.ModelKeys(), ", ")+")")
	fl.IntVar(&f.gpus, "gpus", 2, "simulated GPUs")
	fl.StringVar(&f.policies, "policy", "default,mps,miso,miger,mmk", "comma-separated policies")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed (synthetic workloads and the predictor's forest)")
	fl.StringVar(&f.traces, "traces", "../shared/cluster-traces", "folder of openb_pod_list_default.csv")
	fl.StringVar(&f.plot, "plot", "", "write the JCT CDF per policy to this SVG file")
	fl.DurationVar(&f.migReconfig, "mig-reconfig", jobsim.DefaultMIGReconfig, "time a MIG change stops the instances it touches")
	fl.IntVar(&f.maxShare, "max-share", jobsim.DefaultMaxShare, "most jobs MPS packs into one instance (miger, mmk)")
	return cmd
}

func runSimJobs(a *app, cmd *cobra.Command, f *simJobsFlags) error {
	if f.gpus < 1 || f.gpus > 1024 {
		return fmt.Errorf("flag --gpus: %d is outside 1..1024", f.gpus)
	}
	if f.migReconfig < 0 {
		return fmt.Errorf("flag --mig-reconfig: %v is negative", f.migReconfig)
	}
	if f.maxShare < 1 || f.maxShare > 48 {
		return fmt.Errorf("flag --max-share: %d is outside 1..48", f.maxShare)
	}
	model, err := partitioner.LookupModel(f.gpuModel)
	if err != nil {
		return fmt.Errorf("flag --gpu-model: %w", err)
	}
	var policies []string
	for _, p := range strings.Split(f.policies, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(jobsim.Policies(), p) {
			return fmt.Errorf("flag --policy: %q is not one of %s", p, strings.Join(jobsim.Policies(), ", "))
		}
		policies = append(policies, p)
	}
	// openb demands are shares of the largest instance (the whole GPU).
	jobs, err := trace.LoadWorkload(f.workload, f.traces, f.seed, model.Profiles[len(model.Profiles)-1].MemoryMiB)
	if err != nil {
		return fmt.Errorf("flag --workload: %w", err)
	}
	models, err := jobsim.BuiltinModels(f.seed)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	start := time.Now()
	e := jobsim.Experiment{
		Workload: f.workload, Jobs: jobs, Model: model, GPUs: f.gpus, Policies: policies,
		Models: models, MIGReconfig: f.migReconfig, MaxShare: f.maxShare,
		Progress: func(policy string, done, total int) {
			fmt.Fprintf(stderr, "\r%s: %d/%d jobs done (%s)   ", policy, done, total, time.Since(start).Round(time.Second))
			if done == total {
				fmt.Fprintln(stderr)
			}
		},
	}
	results, err := e.Run()
	if err != nil {
		return err
	}
	if f.plot != "" {
		out, err := os.Create(f.plot)
		if err != nil {
			return fmt.Errorf("flag --plot: %w", err)
		}
		title := fmt.Sprintf("%s on %d x %s: CDF of JCT / JCT alone", f.workload, f.gpus, model.Key)
		if err := jobsim.WriteJCTCDF(out, title, results); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return fmt.Errorf("flag --plot: %w", err)
		}
	}
	p := a.printer(cmd)
	if p.json {
		return p.JSON(map[string]any{"results": results})
	}
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		rows = append(rows, []string{r.Policy, r.Workload, fmt.Sprintf("%.0f", r.AvgJCTS), fmt.Sprintf("%.0f", r.Makespan),
			fmt.Sprintf("%.2f", r.STP), fmt.Sprint(r.Reconfigs), fmt.Sprint(r.Restarts),
			fmt.Sprintf("%.2fx", r.OnlineSlowdown), fmt.Sprint(r.Unfinished)})
	}
	return p.Table("", []string{"POLICY", "WORKLOAD", "AVG_JCT_S", "MAKESPAN_S", "STP", "RECONFIGS", "RESTARTS", "ONLINE_JCT/ALONE", "UNFINISHED"}, rows)
}
