package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/sim/jobsim"
	"github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

// simJobsFlags are the flags of `mmkctl sim jobs`.
type simJobsFlags struct {
	workload    string
	gpuModel    string
	gpus        int
	policies    string
	seed        uint64
	load        float64
	traces      string
	plot        string
	migReconfig time.Duration
	maxShare    int
	sloFactor   float64
	slos        string
	sloHeadroom float64
	sloMaxWait  time.Duration
	oracleError float64
	// placementsOut, placementsTop and placementsPercents: the groups
	// Algorithm 1 placed together, as the profiling campaign's runs.
	placementsOut      string
	placementsTop      int
	placementsPercents string
}

// defaultSimPolicies are the policies sim jobs compares by default: the
// baselines (mps-prio, plain MPS with the offline jobs at client priority
// 1, the strongest a user could pick by hand) and mmk.
const defaultSimPolicies = "default,mps,mps-prio,miso,miger,mmk"

func newSimJobsCommand(a *app) *cobra.Command {
	f := &simJobsFlags{}
	cmd := &cobra.Command{
		Use:   "jobs --workload testbed|large|openb[:N] --gpus N --policy " + defaultSimPolicies,
		Short: "Replay a job trace on simulated GPUs under each partition policy",
		Long: `Replays a job trace on simulated GPUs under each job-level policy and
prints the average job completion time, the makespan, the system
throughput (sum over jobs of time alone / completion time), MIG
reconfigurations and job restarts.

Workloads: testbed (40 online + 20 offline MMK Table III jobs), large
(800 + 400), both with Poisson arrivals at --load (the GPU work offered
per second over the GPUs' capacity), and openb[:N] (the first N jobs of
the Alibaba openb trace in --traces: the folder of
openb_pod_list_default.csv or a pod list of any variant). Online jobs are
services: requests at a load, served within a latency target (SLO).
Policies: ` + strings.Join(jobsim.Policies(), ", ") + `, alg1; Algorithm 1's
policies take +option or -option (` + strings.Join(jobsim.Options(), ", ") + `),
e.g. alg1+full-demand or mmk-gate. Job speeds come from the built-in
H200 profiles (ground truth); policies decide with mmk's default
predictor trained on the same data. docs/results/partition.md explains
the model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimJobs(a, cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "testbed", "job trace: testbed, large or openb[:N]")
	fl.StringVar(&f.gpuModel, "gpu-model", "A100-80GB", "GPU model ("+strings.Join(partitioner.ModelKeys(), ", ")+")")
	fl.IntVar(&f.gpus, "gpus", 2, "simulated GPUs")
	fl.StringVar(&f.policies, "policy", defaultSimPolicies, "comma-separated policies")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed (synthetic workloads, requests and the predictor's training)")
	fl.Float64Var(&f.load, "load", trace.DefaultLoad, "offered load of the synthetic workloads")
	fl.StringVar(&f.traces, "traces", "../shared/cluster-traces", "folder of openb_pod_list_default.csv, or an openb pod list")
	fl.StringVar(&f.plot, "plot", "", "write the JCT CDF per policy to this SVG file")
	fl.DurationVar(&f.migReconfig, "mig-reconfig", jobsim.DefaultMIGReconfig, "time a MIG change stops the instances it touches")
	fl.IntVar(&f.maxShare, "max-share", jobsim.DefaultMaxShare, "most jobs MPS packs into one instance (Algorithm 1's policies)")
	fl.Float64Var(&f.sloFactor, "slo-factor", jobsim.DefaultSLOFactor, "latency target of services without --slo: p99 within this multiple of one request alone")
	fl.Float64Var(&f.sloHeadroom, "slo-headroom", jobsim.DefaultSLOHeadroom, "slowdown a service's need leaves room for under the slo option (memory interference that priority leaves)")
	fl.DurationVar(&f.sloMaxWait, "slo-max-wait", jobsim.DefaultSLOMaxWait, "how long a service waits for a place that holds its target under the slo option before it goes where it fits (negative: as long as it takes)")
	fl.StringVar(&f.slos, "slo", "", "comma-separated latency targets the services draw from, uniformly, as mmkd takes them (p99=1.5x: 1.5 times the service's p99 alone; p99=40ms)")
	fl.Float64Var(&f.oracleError, "oracle-error", 0, "error of the oracle option's answers: each off by exp(e·z), z standard normal per question (0: the ground truth)")
	fl.StringVar(&f.placementsOut, "placements-out", "", "write the groups Algorithm 1's policies placed together, as run keys of a whole-GPU profiling campaign, most frequent first (for mmkctl profile --placements)")
	fl.IntVar(&f.placementsTop, "placements-top", 40, "most groups --placements-out writes (0: all)")
	fl.StringVar(&f.placementsPercents, "placements-percents", "10,20,30,50,70,100", "the campaign's alone percentages, which the groups' shares are rounded to")
	a.addOutputFlag(cmd)
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
	if !(f.load > 0 && f.load <= 100) {
		return fmt.Errorf("flag --load: %v is outside (0, 100]", f.load)
	}
	if !(f.sloFactor > 0 && f.sloFactor <= 1000) {
		return fmt.Errorf("flag --slo-factor: %v is outside (0, 1000]", f.sloFactor)
	}
	if !(f.sloHeadroom >= 1 && f.sloHeadroom <= 10) {
		return fmt.Errorf("flag --slo-headroom: %v is outside [1, 10]", f.sloHeadroom)
	}
	if !(f.oracleError >= 0 && f.oracleError <= 10) {
		return fmt.Errorf("flag --oracle-error: %v is outside [0, 10]", f.oracleError)
	}
	model, err := partitioner.LookupModel(f.gpuModel)
	if err != nil {
		return fmt.Errorf("flag --gpu-model: %w", err)
	}
	var policies []string
	oracle := false
	for _, p := range strings.Split(f.policies, ",") {
		p = strings.TrimSpace(p)
		pol, err := jobsim.ParsePolicy(p)
		if err != nil {
			return fmt.Errorf("flag --policy: %w", err)
		}
		oracle = oracle || pol.Has(jobsim.OptOracle)
		policies = append(policies, p)
	}
	if f.oracleError > 0 && !oracle {
		return fmt.Errorf("flag --oracle-error: %v, but no policy of %q decides with the oracle (+%s)", f.oracleError, f.policies, jobsim.OptOracle)
	}
	targets, err := parseTargets(f.slos)
	if err != nil {
		return fmt.Errorf("flag --slo: %w", err)
	}
	// openb demands are shares of the largest instance (the whole GPU).
	jobs, err := trace.LoadWorkload(f.workload, trace.WorkloadOptions{Traces: f.traces, Seed: f.seed, GPUs: f.gpus, Load: f.load, GPUMemMiB: model.Profiles[len(model.Profiles)-1].MemoryMiB, SLOs: targets})
	if err != nil {
		return fmt.Errorf("flag --workload: %w", err)
	}
	models, err := jobsim.BuiltinModelsFor(f.seed, model.Key)
	if err != nil {
		return err
	}
	prog, start := progress.New(cmd.ErrOrStderr()), time.Now()
	e := jobsim.Experiment{
		Workload: f.workload, Jobs: jobs, Model: model, GPUs: f.gpus, Policies: policies,
		Models: models, MIGReconfig: f.migReconfig, MaxShare: f.maxShare, SLOFactor: f.sloFactor, SLOHeadroom: f.sloHeadroom, SLOMaxWait: f.sloMaxWait, Seed: f.seed, OracleError: f.oracleError,
		Progress: func(policy string, done, total int) {
			prog.Updatef(done, total, "%s: %d/%d jobs done (%s)", policy, done, total, time.Since(start).Round(time.Second))
		},
	}
	var placements *predictor.Placements
	if f.placementsOut != "" {
		pcts, err := parsePercents("placements-percents", f.placementsPercents)
		if err != nil {
			return err
		}
		if len(pcts) == 0 {
			return fmt.Errorf("flag --placements-percents: no percentage")
		}
		if f.placementsTop < 0 {
			return fmt.Errorf("flag --placements-top: %d is negative", f.placementsTop)
		}
		placements = predictor.NewPlacements(pcts)
		e.OnPlan = func(_ string, plan *partitioner.Plan) { placements.Add(plan) }
	}
	results, err := e.Run()
	prog.End()
	if err != nil {
		return err
	}
	if placements != nil {
		if err := writePlacements(placements, f); err != nil {
			return fmt.Errorf("flag --placements-out: %w", err)
		}
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
			fmt.Sprintf("%.2f", r.STP), fmt.Sprintf("%.2f%%", 100*r.SLOAttainment), fmt.Sprintf("%d/%d", r.ServicesMet, r.Services), fmt.Sprintf("%.2f", r.P99), fmt.Sprint(r.Reconfigs), fmt.Sprint(r.Restarts),
			fmt.Sprint(r.Unfinished)})
	}
	return p.Table("", []string{"POLICY", "WORKLOAD", "AVG_JCT_S", "MAKESPAN_S", "STP", "SLO", "SERVICES_MET", "P99/TARGET", "RECONFIGS", "RESTARTS", "UNFINISHED"}, rows)
}

// writePlacements writes the most frequent groups (--placements-top) as
// run keys to --placements-out, one per line, each after a comment with
// how often it was placed.
func writePlacements(p *predictor.Placements, f *simJobsFlags) error {
	runs, counts := p.Top(f.placementsTop)
	var b strings.Builder
	fmt.Fprintf(&b, "# groups Algorithm 1 placed together: mmkctl sim jobs --workload %s --gpus %d --gpu-model %s --policy %s --seed %d --load %g\n",
		f.workload, f.gpus, f.gpuModel, f.policies, f.seed, f.load)
	fmt.Fprintf(&b, "# as whole-GPU runs at the alone percentages %s, at mmkd's client priorities; most frequent first\n", f.placementsPercents)
	for i, r := range runs {
		fmt.Fprintf(&b, "# placed %d times\n%s\n", counts[i], r.Key())
	}
	return atomicfile.Write(f.placementsOut, []byte(b.String()))
}

// parseTargets reads a comma-separated list of latency targets; "" is
// none.
func parseTargets(list string) ([]slo.Target, error) {
	var out []slo.Target
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		t, err := slo.Parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
