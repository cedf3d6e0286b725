// Command partition regenerates docs/results/partition.md: the job-level
// policies (default, mps, mps with client priority set by hand, the
// published MIGER and MISO, the unrestricted Algorithm 1 variants, mmk)
// on the testbed and large workloads at load 1, seeds 1-5, against the
// MMK paper's claims and against the strongest simple alternative
// (mps-prio); the ablation of Algorithm 1's named options; a load sweep
// from 0.5 to 1.5; the cost of a MIG change at 5, 30 and 60 s; mmk's
// cap on jobs per instance; the same on H100 geometry; and the openb
// trace. Runs go in
// parallel, one per core; progress goes to stderr.
//
//	go run ./bench/partition -o docs/results/partition.md
package main

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
	slotarget "github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

func main() {
	out := flag.String("o", "docs/results/partition.md", "output file")
	traces := flag.String("traces", "../shared/cluster-traces", "folder of openb_pod_list_default.csv, or an openb pod list")
	seeds := flag.Int("seeds", 5, "seeds 1..N of the synthetic workloads and the requests")
	parallel := flag.Int("parallel", runtime.GOMAXPROCS(0), "simulations run at once")
	withMap := flag.Bool("map", true, "the map of which policy wins over latency targets and load (most of the runs)")
	flag.Parse()
	if *seeds < 1 || *parallel < 1 {
		fmt.Fprintln(os.Stderr, "partition: -seeds and -parallel must be at least 1")
		os.Exit(2)
	}
	if err := generate(*out, *traces, *seeds, *parallel, *withMap); err != nil {
		fmt.Fprintln(os.Stderr, "partition:", err)
		os.Exit(1)
	}
}

// workload is one synthetic workload of the report.
type workload struct {
	name string
	gpus int
	// paper is MMK's claim against MIGER: JCT, makespan, throughput (%).
	paper [3]float64
}

var workloads = []workload{
	{"testbed", 2, [3]float64{-28, -32, 35}},
	{"large", 8, [3]float64{-41, -36, 31}},
}

const (
	openbSpec = "openb:200"
	openbGPUs = 12
)

// The sections' policies and settings.
var (
	loads     = []float64{0.5, 0.75, 1, 1.25, 1.5}
	migCosts  = []time.Duration{5 * time.Second, 30 * time.Second, 60 * time.Second}
	sweepPols = []string{jobsim.JobMPS, jobsim.JobMPSPrio, jobsim.JobMISO, jobsim.JobMIGER, jobsim.JobMMK}
	// capShares are the caps on jobs per instance mmk is run with beside
	// the default (jobsim.DefaultMaxShare).
	capShares = []int{2, 3, 4}
	// h100Model and h100Pols: the main comparison on H100 geometry, where
	// the whole-GPU MIG instance has all the GPU's SMs.
	h100Model = "H100-80GB"
	h100Pols  = []string{jobsim.JobMPS, jobsim.JobMPSPrio, jobsim.JobMISO, jobsim.JobMIGER, jobsim.JobMMK, jobsim.JobMMK + "+" + jobsim.OptFixedMIG}
	costPols  = []string{jobsim.JobMISO, jobsim.JobMIGER, jobsim.JobAlg1Unprotected, jobsim.JobMMK}
	// needRuns are the runs of the section on what mmk needs from its
	// predictor (seed, workload and load set per run), on H100 geometry
	// unless they say otherwise: mmk as it is, Algorithm 1's own greedy
	// placement without MIG changes or a cap (greedy), and that placement
	// deciding with the ground truth (the oracle option) at each error.
	greedy     = jobsim.JobMMK + "-" + jobsim.OptSpread + "+" + jobsim.OptFixedMIG
	oracleErrs = []float64{0, 0.05, 0.1, 0.2}
	noCap      = jobsim.MaxMPSClients
	needRuns   = needRunsOf()
)

func needRunsOf() []run {
	h := func(pol string, share int, e float64) run {
		return run{policy: pol, maxShare: share, gpuModel: h100Model, oracleErr: e}
	}
	out := []run{
		h(jobsim.JobMPSPrio, 0, 0),
		h(jobsim.JobMMK, 0, 0),
		h(jobsim.JobMMK+"+"+jobsim.OptFixedMIG, 0, 0),
		h(greedy, noCap, 0),
		h(jobsim.MMKD, noCap, 0),
		h(jobsim.MMKD+"-"+jobsim.OptSpread, noCap, 0),
		h(jobsim.JobMMK+"+"+jobsim.OptOracle, 0, 0),
	}
	for _, e := range oracleErrs {
		out = append(out, h(greedy+"+"+jobsim.OptOracle, noCap, e))
	}
	// The same on the default (A100) geometry, whose MIG mode costs SMs.
	return append(out, run{policy: jobsim.JobMPSPrio}, run{policy: greedy + "+" + jobsim.OptOracle, maxShare: noCap})
}

// ablation is Algorithm 1 with MMK's protections, each named option
// added alone, mmk, mmk with each of its options taken away, and mmk
// without MIG changes and with the kernel scheduler's effect.
func ablation() []string {
	out := []string{jobsim.JobAlg1}
	for _, o := range jobsim.Options() {
		out = append(out, jobsim.JobAlg1+"+"+o)
	}
	out = append(out, jobsim.JobMMK)
	for _, o := range jobsim.MMKOptions {
		out = append(out, jobsim.JobMMK+"-"+o)
	}
	return append(out, jobsim.JobMMK+"+"+jobsim.OptFixedMIG, jobsim.JobMMK+"+"+jobsim.OptKernel)
}

// run is one simulation.
type run struct {
	workload string
	gpus     int
	load     float64
	seed     uint64
	policy   string
	mig      time.Duration
	// maxShare caps the jobs per instance (0: jobsim.DefaultMaxShare).
	maxShare int
	// gpuModel is the GPU's geometry ("": the report's, A100-80GB).
	gpuModel string
	// oracleErr is jobsim.Config.OracleError (policies with the oracle
	// option).
	oracleErr float64
	// slo is every service's latency target ("": the simulation's
	// default).
	slo string
}

// runner runs simulations; the predictor is trained with each
// run's seed, as mmkctl sim jobs --seed does, so that one command
// reproduces any run of the report.
type runner struct {
	model  *partitioner.Model // the default geometry
	traces string
	mu     sync.Mutex
	jobs   map[string][]trace.SimJob
	models map[modelsKey]*jobsim.Models
}

func (r *runner) modelsFor(seed uint64, key string) (*jobsim.Models, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := modelsKey{seed, key}
	if m, ok := r.models[k]; ok {
		return m, nil
	}
	m, err := jobsim.BuiltinModelsFor(seed, key)
	if err != nil {
		return nil, err
	}
	r.models[k] = m
	return m, nil
}

// modelsKey is a seed and the geometry whose samples train the
// predictor.
type modelsKey struct {
	seed uint64
	key  string
}

// modelOf is the run's GPU geometry.
func (r *runner) modelOf(x run) (*partitioner.Model, error) {
	if x.gpuModel == "" {
		return r.model, nil
	}
	return partitioner.LookupModel(x.gpuModel)
}

func (r *runner) workload(x run) ([]trace.SimJob, error) {
	model, err := r.modelOf(x)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s|%d|%g|%d|%s|%s", x.workload, x.gpus, x.load, x.seed, model.Key, x.slo)
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.jobs[key]; ok {
		return j, nil
	}
	opt := trace.WorkloadOptions{Traces: r.traces, Seed: x.seed, GPUs: x.gpus, Load: x.load, GPUMemMiB: model.Profiles[len(model.Profiles)-1].MemoryMiB}
	if x.slo != "" {
		t, err := slotarget.Parse(x.slo)
		if err != nil {
			return nil, err
		}
		opt.SLOs = []slotarget.Target{t}
	}
	j, err := trace.LoadWorkload(x.workload, opt)
	if err != nil {
		return nil, err
	}
	r.jobs[key] = j
	return j, nil
}

// meanSpan is the time over which w's jobs arrive at load 1 (the last
// arrival), the mean over seeds 1..seeds, from the runner's workloads.
func (r *runner) meanSpan(w workload, seeds int) (float64, error) {
	span := 0.0
	for s := 1; s <= seeds; s++ {
		jobs, err := r.workload(run{workload: w.name, gpus: w.gpus, load: 1, seed: uint64(s)})
		if err != nil {
			return 0, err
		}
		span += jobs[len(jobs)-1].Arrival.Seconds() / float64(seeds)
	}
	return span, nil
}

func (r *runner) simulate(x run) (*jobsim.Result, error) {
	jobs, err := r.workload(x)
	if err != nil {
		return nil, err
	}
	model, err := r.modelOf(x)
	if err != nil {
		return nil, err
	}
	models, err := r.modelsFor(x.seed, model.Key)
	if err != nil {
		return nil, err
	}
	// The experiment mmkctl sim jobs runs, with one policy.
	e := jobsim.Experiment{
		Workload: x.workload, Jobs: jobs, Model: model, GPUs: x.gpus, Policies: []string{x.policy},
		Models: models, MIGReconfig: x.mig, MaxShare: x.maxShare, Seed: x.seed, OracleError: x.oracleErr,
	}
	res, err := e.Run()
	if err != nil {
		return nil, fmt.Errorf("%s, load %g, seed %d, MIG %v, max share %d, model %q, oracle error %g, SLO %q: %w", x.workload, x.load, x.seed, x.mig, x.maxShare, x.gpuModel, x.oracleErr, x.slo, err)
	}
	return res[0], nil
}

// runAll simulates every run, parallel at once, and reports progress.
func (r *runner) runAll(runs []run, parallel int) (map[run]*jobsim.Result, error) {
	out := make(map[run]*jobsim.Result, len(runs))
	took := map[run]time.Duration{}
	var mu sync.Mutex
	var firstErr error
	work := make(chan run)
	var wg sync.WaitGroup
	start, done := time.Now(), 0
	prog := progress.New(os.Stderr)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range work {
				t0 := time.Now()
				res, err := r.simulate(x)
				mu.Lock()
				took[x] = time.Since(t0)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[x] = res
				done++
				prog.Updatef(done, len(runs), "partition: %d/%d simulations (%s)", done, len(runs), time.Since(start).Round(time.Second))
				mu.Unlock()
			}
		}()
	}
	for _, x := range runs {
		work <- x
	}
	close(work)
	wg.Wait()
	prog.End()
	slow := slices.SortedFunc(maps.Keys(took), func(a, b run) int { return cmp.Compare(took[b], took[a]) })
	fmt.Fprintf(os.Stderr, "partition: the slowest simulations:")
	for _, x := range slow[:min(8, len(slow))] {
		fmt.Fprintf(os.Stderr, " %s %s load %g seed %d MIG %v (%s);", x.workload, x.policy, x.load, x.seed, x.mig, took[x].Round(10*time.Millisecond))
	}
	fmt.Fprintln(os.Stderr)
	return out, firstErr
}

func generate(out, traces string, seeds, parallel int, withMap bool) error {
	model, err := partitioner.LookupModel("A100-80GB")
	if err != nil {
		return err
	}
	r := &runner{model: model, traces: traces, jobs: map[string][]trace.SimJob{}, models: map[modelsKey]*jobsim.Models{}}
	models, err := r.modelsFor(1, model.Key)
	if err != nil {
		return err
	}
	seen := map[run]bool{}
	var runs []run
	add := func(x run) {
		if !seen[x] {
			seen[x] = true
			runs = append(runs, x)
		}
	}
	for _, w := range workloads {
		for s := 1; s <= seeds; s++ {
			base := run{workload: w.name, gpus: w.gpus, load: 1, seed: uint64(s), mig: jobsim.DefaultMIGReconfig}
			for _, p := range append(append(jobsim.Policies(), jobsim.JobMPSInMIG), ablation()...) {
				x := base
				x.policy = p
				add(x)
			}
			for _, l := range loads {
				for _, p := range sweepPols {
					x := base
					x.load, x.policy = l, p
					add(x)
				}
			}
			for _, c := range migCosts {
				for _, p := range costPols {
					x := base
					x.mig, x.policy = c, p
					add(x)
				}
			}
			for _, c := range capShares {
				x := base
				x.maxShare, x.policy = c, jobsim.JobMMK
				add(x)
			}
			for _, p := range h100Pols {
				x := base
				x.gpuModel, x.policy = h100Model, p
				add(x)
			}
			for _, n := range needRuns {
				x := base
				x.policy, x.maxShare, x.gpuModel, x.oracleErr = n.policy, n.maxShare, n.gpuModel, n.oracleErr
				add(x)
			}
		}
	}
	openb := true
	if _, err := os.Stat(traces); err != nil {
		openb = false
		fmt.Fprintf(os.Stderr, "partition: %s: %v; the openb section is left out\n", traces, err)
	}
	if openb {
		for _, p := range jobsim.Policies() {
			add(run{workload: openbSpec, gpus: openbGPUs, seed: 1, policy: p, mig: jobsim.DefaultMIGReconfig})
		}
	}
	if withMap {
		for _, x := range mapRuns(seeds, openb) {
			add(x)
		}
	}
	res, err := r.runAll(runs, parallel)
	if err != nil {
		return err
	}
	spans := map[string]float64{}
	for _, w := range workloads {
		span, err := r.meanSpan(w, seeds)
		if err != nil {
			return err
		}
		spans[w.name] = span
	}
	rep := &report{res: res, seeds: seeds, models: models, model: model, spans: spans}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Job-level partition policies in simulation\n\n")
	fmt.Fprintf(&b, "Generated by `make results-partition` (`go run ./bench/partition -o %s`) on %s: seeds 1-%d, every number a mean over the seeds unless it says otherwise.\n", out, time.Now().UTC().Format("2006-01-02"), seeds)
	fmt.Fprintf(&b, "Reproduce one run with `mmkctl sim jobs --workload W --gpus N --load L --seed S --policy P`.\n\n")
	rep.method(&b)
	if withMap {
		if err := rep.sloMap(&b, filepath.Dir(out), openb); err != nil {
			return err
		}
	}
	rep.acceptance(&b)
	for _, w := range workloads {
		svg, err := rep.plot(filepath.Dir(out), w)
		if err != nil {
			return err
		}
		rep.mainTable(&b, w, svg)
	}
	rep.ablation(&b)
	rep.sweep(&b)
	rep.costs(&b)
	rep.caps(&b)
	rep.h100(&b)
	rep.predictorNeed(&b)
	if openb {
		rep.openb(&b)
	}
	rep.why(&b)
	return atomicfile.Write(out, b.Bytes())
}

// seedsOf lists the runs of one setting over the seeds.
func (p *report) seedsOf(w workload, load float64, policy string, mig time.Duration) []*jobsim.Result {
	return p.seedsLike(run{workload: w.name, gpus: w.gpus, load: load, policy: policy, mig: mig})
}

// seedsLike lists the runs like x (its seed aside) over the seeds.
func (p *report) seedsLike(x run) []*jobsim.Result {
	var out []*jobsim.Result
	for s := 1; s <= p.seeds; s++ {
		x.seed = uint64(s)
		if r, ok := p.res[x]; ok && r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (p *report) plot(dir string, w workload) (string, error) {
	var res []*jobsim.Result
	for _, pol := range jobsim.Policies() {
		if rs := p.seedsOf(w, 1, pol, jobsim.DefaultMIGReconfig); len(rs) > 0 {
			res = append(res, rs[0])
		}
	}
	svg := fmt.Sprintf("partition-%s.svg", strings.ReplaceAll(w.name, ":", "-"))
	var plot bytes.Buffer
	if err := jobsim.WriteJCTCDF(&plot, fmt.Sprintf("%s on %d x %s, load 1, seed 1: CDF of JCT / JCT alone", w.name, w.gpus, p.model.Key), res); err != nil {
		return "", err
	}
	return svg, atomicfile.Write(filepath.Join(dir, svg), plot.Bytes())
}
