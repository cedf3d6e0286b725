package jobsim

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/trace"
)

var (
	jobModelsOnce sync.Once
	jobModels     *Models
	jobModelsErr  error
)

func builtinJobModels(t testing.TB) *Models {
	t.Helper()
	jobModelsOnce.Do(func() { jobModels, jobModelsErr = BuiltinModels(1) })
	if jobModelsErr != nil {
		t.Fatal(jobModelsErr)
	}
	return jobModels
}

func a100(t testing.TB) *partitioner.Model {
	t.Helper()
	m, err := partitioner.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustSynthetic(t testing.TB, online, offline int, seed uint64) []trace.SimJob {
	t.Helper()
	jobs, err := trace.SyntheticJobs(trace.Synthetic{Online: online, Offline: offline, GPUs: 1, Load: 1}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// config is a simulation of jobs on gpus A100s under policy with the
// built-in models.
func config(t testing.TB, policy string, gpus int, jobs ...trace.SimJob) Config {
	jm := builtinJobModels(t)
	return Config{Jobs: jobs, Model: a100(t), GPUs: gpus, Policy: policy, Truth: jm.Truth, Est: jm.Est, Effects: jm.Effects}
}

// TestJobAloneRunsAtItsAloneSpeed: one job on one GPU finishes after its
// start-up plus its work under default sharing and plain MPS, with or
// without priority, and under mmk, which runs with MIG mode off (STP 1);
// under MIG policies it gets the whole-GPU instance (98 of 108 SMs) and
// is slower.
func TestJobAloneRunsAtItsAloneSpeed(t *testing.T) {
	job := trace.SimJob{ID: "a", Type: "resnet50_train", Arrival: 10 * time.Second, Work: 100 * time.Second, MemoryMiB: 4268}
	jt, _ := trace.LookupJobType(job.Type)
	alone := 100 + jt.Startup.Seconds()
	for _, p := range append(Policies(), JobAlg1, JobMPSInMIG) {
		t.Run(p, func(t *testing.T) {
			r, err := Simulate(config(t, p, 1, job))
			if err != nil {
				t.Fatal(err)
			}
			switch p {
			case JobDefault, JobMPS, JobMPSPrio, JobMMK:
				if math.Abs(r.AvgJCTS-alone) > 1e-6 || math.Abs(r.STP-1) > 1e-9 {
					t.Errorf("JCT %.3f s, STP %.4f: want %.3f s and 1", r.AvgJCTS, r.STP, alone)
				}
			default:
				if r.AvgJCTS <= alone || r.STP >= 1 || r.Reconfigs != 0 || r.Restarts != 0 {
					t.Errorf("JCT %.3f s, STP %.4f, %d MIG changes, %d restarts: want slower than %.3f s on 98 of 108 SMs, no change", r.AvgJCTS, r.STP, r.Reconfigs, r.Restarts, alone)
				}
			}
			if r.Makespan != r.AvgJCTS || len(r.NormJCT) != 1 || r.Unfinished != 0 || r.WaitS != 0 {
				t.Errorf("result %+v", r)
			}
			// One job runs (starting up included) for the whole makespan.
			if math.Abs(r.JobsPerGPU-1) > 1e-9 {
				t.Errorf("jobs per GPU %.4f, want 1", r.JobsPerGPU)
			}
			wantLayout, wantShare := "7g.80gb", 1.0
			if p == JobDefault || p == JobMPS || p == JobMPSPrio || p == JobMPSInMIG || p == JobMMK {
				wantLayout, wantShare = "", 0
			}
			if r.MainLayout != wantLayout || math.Abs(r.MainLayoutShare-wantShare) > 1e-9 {
				t.Errorf("layout held longest %q (%.2f), want %q (%.2f)", r.MainLayout, r.MainLayoutShare, wantLayout, wantShare)
			}
		})
	}
}

// TestServiceAlone: a service alone on a GPU under plain MPS works at
// its speed alone for its lifetime from its start; its JCT is its
// start-up and lifetime, and its requests meet their target as an M/D/1
// queue at its load does: the attainment matches Erlang's formula.
func TestServiceAlone(t *testing.T) {
	jm := builtinJobModels(t)
	job := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: 30 * time.Minute, Load: 0.4, MemoryMiB: 1246}
	jt, _ := trace.LookupJobType(job.Type)
	r, err := Simulate(config(t, JobMPS, 1, job))
	if err != nil {
		t.Fatal(err)
	}
	if want := jt.Startup.Seconds() + 1800; math.Abs(r.AvgJCTS-want) > 0.5 {
		t.Errorf("JCT %.2f s, want %.2f (start-up and lifetime)", r.AvgJCTS, want)
	}
	// Speed alone at 100 % is 1: latency L, load 0.4.
	target := DefaultSLOFactor // in service times
	want := md1WaitCDF(0.4, target-1)
	if math.Abs(r.SLOAttainment-want) > 0.005 || r.Requests.Lost != 0 {
		t.Errorf("attainment %.4f, want %.4f (M/D/1 at load 0.4); lost %v", r.SLOAttainment, want, r.Requests.Lost)
	}
	l := jm.Truth.LatencyMs(job.Type) / 1000
	if n := r.Requests.Requests; math.Abs(n-1800*0.4/l) > 4*math.Sqrt(1800*0.4/l) {
		t.Errorf("%.0f requests, want about %.0f", n, 1800*0.4/l)
	}
}

// TestMPSPrioProtectsServices: a service beside a trainer under plain
// MPS shares the GPU's SMs with it; under mps-prio the trainer runs below
// the service's priority, so the service meets more of its target and
// the trainer goes slower, on the same trace.
func TestMPSPrioProtectsServices(t *testing.T) {
	svc := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: 10 * time.Minute, Load: 0.6, MemoryMiB: 1246}
	trainer := trace.SimJob{ID: "t", Type: "vgg19_train", Work: 10 * time.Minute, MemoryMiB: 9000}
	run := func(policy string) *Result {
		r, err := Simulate(config(t, policy, 1, svc, trainer))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain, prio := run(JobMPS), run(JobMPSPrio)
	if !(prio.SLOAttainment > plain.SLOAttainment) {
		t.Errorf("SLO attainment %.4f under %s, %.4f under %s: want priority to raise it", prio.SLOAttainment, JobMPSPrio, plain.SLOAttainment, JobMPS)
	}
	if !(prio.BatchJCTS > plain.BatchJCTS) {
		t.Errorf("trainer JCT %.1f s under %s, %.1f s under %s: want it slower below the service", prio.BatchJCTS, JobMPSPrio, plain.BatchJCTS, JobMPS)
	}
}

// TestServiceRestartLosesRequests: a restart loses the requests a
// service holds; requests arriving while it restarts wait and miss their
// target; the rest are served.
func TestServiceRestartLosesRequests(t *testing.T) {
	v := &service{load: 0.5, life: 100, start: 0, end: 100, latency: 0.01, target: 0.035}
	v.setRate(0, 0, 0.4, false) // overloaded: a queue builds up
	v.stop(50)
	v.setRate(50, 58, 1, true)
	st := v.serve("x", 1)
	if st.Lost < 100 || st.Lost > st.Requests/2 {
		t.Errorf("lost %.0f of %.0f: want the queue held at 50 s lost", st.Lost, st.Requests)
	}
	if st.Met == 0 || st.Met+st.Lost >= st.Requests {
		t.Errorf("met %.0f, lost %.0f of %.0f: want some served late, some in time", st.Met, st.Lost, st.Requests)
	}
	if st.Shared == 0 || st.Shared >= st.Requests {
		t.Errorf("%.0f of %.0f requests shared: want those after 50 s", st.Shared, st.Requests)
	}
	if q := st.Quantile(0.99); !math.IsInf(q, 1) {
		t.Errorf("p99 %.2f: want lost requests to reach it", q)
	}
	// Without the restart none is lost.
	v2 := &service{load: 0.5, life: 100, start: 0, end: 100, latency: 0.01, target: 0.035}
	v2.setRate(0, 0, 1, false)
	if st := v2.serve("x", 1); st.Lost != 0 || st.Attainment() < 0.9 {
		t.Errorf("steady service: %+v", st)
	}
}

// TestSimulateJobsIsDeterministic: same trace and seed, same results;
// a different workload seed changes them.
func TestSimulateJobsIsDeterministic(t *testing.T) {
	run := func(seed uint64, policy string) *Result {
		cfg := config(t, policy, 1, mustSynthetic(t, 8, 4, seed)...)
		cfg.Seed = seed
		r, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, p := range append(Policies(), JobAlg1+"+"+OptKernel) {
		a, b, c := run(1, p), run(1, p), run(2, p)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ: %+v vs %+v", p, a, b)
		}
		if reflect.DeepEqual(a.NormJCT, c.NormJCT) {
			t.Errorf("%s: seeds 1 and 2 gave the same JCTs", p)
		}
	}
}

// longOnline is a service that outlives four offline arrivals.
func longOnline() []trace.SimJob {
	return []trace.SimJob{
		{ID: "on", Type: "densenet121_infer", Online: true, Work: 10 * time.Hour, Load: 0.1, MemoryMiB: 1222},
		{ID: "off1", Type: "vgg19_train", Arrival: time.Minute, Work: 10 * time.Minute, MemoryMiB: 7094},
		{ID: "off2", Type: "resnet152_train", Arrival: 2 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 4388},
		{ID: "off3", Type: "bert_train", Arrival: 3 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 2074},
		{ID: "off4", Type: "densenet201_train", Arrival: 4 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 4468},
	}
}

// TestMIGUnderOnline: Algorithm 1 with MMK's protections changes no MIG
// layout while an online job runs on the GPU (line 12); without them
// (alg1-unprotected) the layout changes; mmk's mig-keep-online may
// change it but never restarts the online job.
func TestMIGUnderOnline(t *testing.T) {
	reconfigs, online := map[string]int{}, map[string]int{}
	for _, p := range []string{JobAlg1, JobAlg1Unprotected, JobMMK} {
		r, err := Simulate(config(t, p, 1, longOnline()...))
		if err != nil {
			t.Fatal(err)
		}
		reconfigs[p], online[p] = r.Reconfigs, r.OnlineRestarts
	}
	if reconfigs[JobAlg1] != 0 || online[JobAlg1] != 0 {
		t.Errorf("alg1 changed MIG %d times, restarted the service %d times under it", reconfigs[JobAlg1], online[JobAlg1])
	}
	if reconfigs[JobAlg1Unprotected] == 0 {
		t.Errorf("alg1-unprotected never changed MIG: the test shows nothing")
	}
	if online[JobMMK] != 0 {
		t.Errorf("mmk restarted the service %d times", online[JobMMK])
	}
}

// TestMIGERRetriesEvery35s: MIGER holds at most 4 jobs per GPU; a job
// that finds no place on arrival waits in its queue and is tried again
// only at 30 s + k x 35 s, so it starts at one of those times even
// though a place frees earlier. Which job waits depends on the slices
// the predictor leads MIGER to.
func TestMIGERRetriesEvery35s(t *testing.T) {
	var jobs []trace.SimJob
	for i, typ := range []string{"bert_train", "densenet121_train", "resnet50_train", "transformer_train"} {
		jobs = append(jobs, trace.SimJob{ID: typ, Type: typ, Arrival: time.Duration(i) * time.Second, Work: time.Duration(100+300*i) * time.Second, MemoryMiB: 4000})
	}
	jobs = append(jobs, trace.SimJob{ID: "fifth", Type: "resnet152_train", Arrival: 10 * time.Second, Work: time.Minute, MemoryMiB: 4388})
	s, err := newSim(config(t, JobMIGER, 1, jobs...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	waited := 0
	for _, j := range s.jobs {
		if j.started <= j.Arrival.Seconds()+1e-9 {
			continue
		}
		waited++
		k := (j.started - migerFirstRetry) / 35
		if j.started <= 100 || math.Abs(k-math.Round(k)) > 1e-6 {
			t.Errorf("%s arrived at %v and started at %.2f s: want a retry time (30 + 35 k s) after a place freed", j.ID, j.Arrival, j.started)
		}
	}
	if waited == 0 {
		t.Error("every job started on arrival: want five jobs on a GPU that holds four")
	}
	if s.res.Unfinished != 0 {
		t.Errorf("%d unfinished", s.res.Unfinished)
	}
}

// TestMISOProfilesEachArrival: a job alone starts at once on the whole
// GPU; a second one joining it puts both through a 30 s MPS phase: the
// first is checkpointed and restarted into MPS, both are restarted into
// their slices when the phase ends, and when the first ends (nothing
// waiting) the other is moved to the whole GPU: four restarts, a MIG
// change into two slices and one back.
func TestMISOProfilesEachArrival(t *testing.T) {
	jobs := []trace.SimJob{
		{ID: "a", Type: "resnet50_train", Work: 20 * time.Minute, MemoryMiB: 4268},
		{ID: "b", Type: "bert_train", Arrival: 2 * time.Minute, Work: 20 * time.Minute, MemoryMiB: 2074},
	}
	s, err := newSim(config(t, JobMISO, 1, jobs...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	if s.res.Restarts != 4 || s.res.Reconfigs != 2 {
		t.Errorf("%d restarts, %d MIG changes: want 4 restarts and 2 MIG changes", s.res.Restarts, s.res.Reconfigs)
	}
	if got := s.byID["a"].started; got != 0 {
		t.Errorf("a started at %v: want at once", got)
	}
}

// TestRestartCosts: a restart stops an offline job for its save, start-up
// and restore; a service for its start-up and restore.
func TestRestartCosts(t *testing.T) {
	cfg := config(t, JobMMK, 1, trace.SimJob{ID: "o", Type: "resnet50_train", Work: time.Hour, MemoryMiB: 4268},
		trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: time.Hour, Load: 0.1, MemoryMiB: 1246})
	cfg.Costs.Checkpoint = map[string]CheckpointCost{"resnet50_train": {SaveS: 2, RestoreS: 3}, "resnet50_infer": {SaveS: 5, RestoreS: 1}}
	s, err := newSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, v := s.byID["o"], s.byID["s"]
	o.gpu, v.gpu, s.now = 0, 0, 100
	jt, _ := trace.LookupJobType("resnet50_train")
	it, _ := trace.LookupJobType("resnet50_infer")
	if got, want := s.restartDelay(o), 2+jt.Startup.Seconds()+3; math.Abs(got-want) > 1e-9 {
		t.Errorf("offline restart %.3f s, want %.3f", got, want)
	}
	if got, want := s.restartDelay(v), it.Startup.Seconds()+1; math.Abs(got-want) > 1e-9 {
		t.Errorf("service restart %.3f s, want %.3f", got, want)
	}
}

// TestSimulateJobsErrors: bad configurations are errors naming the fault.
func TestSimulateJobsErrors(t *testing.T) {
	ok := trace.SimJob{ID: "a", Type: "resnet50_train", Work: time.Minute, MemoryMiB: 1}
	svc := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: time.Minute, MemoryMiB: 1}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no gpus", Config{Jobs: []trace.SimJob{ok}, Policy: JobMMK}, "gpus 0"},
		{"bad policy", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: "fair"}, `policy "fair"`},
		{"bad option", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: "mmk+turbo"}, `option "turbo"`},
		{"option of a baseline", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: "miger+gate"}, "Algorithm 1's policies only"},
		{"bad type", Config{Jobs: []trace.SimJob{{ID: "x", Type: "gpt5", Work: time.Minute}}, GPUs: 1, Policy: JobDefault}, `unknown job type "gpt5"`},
		{"twice", Config{Jobs: []trace.SimJob{ok, ok}, GPUs: 1, Policy: JobDefault}, `job id "a" is given twice`},
		{"no work", Config{Jobs: []trace.SimJob{{ID: "z", Type: "resnet50_train"}}, GPUs: 1, Policy: JobDefault}, "work 0s"},
		{"service without load", Config{Jobs: []trace.SimJob{svc}, GPUs: 1, Policy: JobDefault}, "load 0"},
		{"bad SLO factor", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: JobDefault, SLOFactor: -1}, "SLO factor -1"},
		{"bad MIG time", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: JobDefault, Costs: Costs{MIGReconfig: -time.Second}}, "MIG change time -1s"},
		{"online job of an offline type", Config{Jobs: []trace.SimJob{{ID: "m", Type: "resnet50_train", Online: true, Work: time.Minute, Load: 0.1, MemoryMiB: 1}}, GPUs: 1, Policy: JobDefault}, "online true, but its type resnet50_train is online false"},
		{"bad oracle error", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: JobMMK + "+" + OptOracle, OracleError: -0.1}, "oracle error -0.1"},
		{"NaN oracle error", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: JobMMK, OracleError: math.NaN()}, "oracle error NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jm := builtinJobModels(t)
			tc.cfg.Model, tc.cfg.Truth, tc.cfg.Est = a100(t), jm.Truth, jm.Est
			_, err := Simulate(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParsePolicy: names with options added and taken away.
func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []string
	}{
		{"alg1", nil},
		{"alg1+full-demand+online-first", []string{OptFullDemand, OptOnlineFirst}},
		{"mmk", MMKOptions},
		{"mmk-gate", slices.DeleteFunc(slices.Clone(MMKOptions), func(o string) bool { return o == OptGate })},
		{"mmk-mig-keep-online+online-reclaim", append(slices.DeleteFunc(slices.Clone(MMKOptions), func(o string) bool { return o == OptMIGKeepOnline }), OptOnlineReclaim)},
		{MMKD, MMKOptions},
	} {
		p, err := ParsePolicy(tc.name)
		if err != nil || !slices.Equal(p.opts, tc.opts) {
			t.Errorf("%s: options %v (%v), want %v", tc.name, p.opts, err, tc.opts)
		}
	}
	if p, err := ParsePolicy("alg1-unprotected"); err != nil || !p.unprotected {
		t.Errorf("alg1-unprotected: %+v, %v", p, err)
	}
	for _, bad := range []string{"", "mmk+", "alg1+full", "mmkx", "miso+slo"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestJobTooBigWaitsForever: a job no GPU can hold is reported
// unfinished, not simulated forever, and does not stop the others.
func TestJobTooBigWaitsForever(t *testing.T) {
	jobs := []trace.SimJob{{ID: "big", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 1 << 30}, {ID: "ok", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 7094}}
	for _, p := range Policies() {
		r, err := Simulate(config(t, p, 1, jobs...))
		if err != nil {
			t.Fatal(err)
		}
		if r.Unfinished != 1 || len(r.NormJCT) != 1 {
			t.Errorf("%s: unfinished %d, finished %d; want 1 and 1", p, r.Unfinished, len(r.NormJCT))
		}
	}
}

// TestSpeedModelFitsMeasurements: the ground truth reproduces its own
// alone measurements exactly, the co-located ones within 15 %, and the
// oversubscribed ones (shares above 100 %) without bias.
func TestSpeedModelFitsMeasurements(t *testing.T) {
	jm := builtinJobModels(t)
	if got := jm.Truth.Alone("vgg19_train", 100); math.Abs(got-1) > 1e-9 {
		t.Errorf("alone at 100 %% = %.4f, want 1", got)
	}
	f := jm.Fit
	if f.MeanError <= 0 || f.MeanError > 0.15 {
		t.Errorf("ground truth error %.3f: want in (0, 0.15]", f.MeanError)
	}
	if f.Over < 100 || math.Abs(f.OverBias) > 0.02 || f.Beta <= 0 || f.Beta >= 1 {
		t.Errorf("oversubscribed runs: %d, bias %+.3f, beta %.2f: want a bias within 2 %%", f.Over, f.OverBias, f.Beta)
	}
	lo, mid, hi := jm.Truth.Alone("vgg19_train", 20), jm.Truth.Alone("vgg19_train", 25), jm.Truth.Alone("vgg19_train", 30)
	if !(lo <= mid && mid <= hi) || jm.Truth.Alone("vgg19_train", 5) != jm.Truth.Alone("vgg19_train", 10)/2 {
		t.Errorf("interpolation: 20 %% %.3f, 25 %% %.3f, 30 %% %.3f", lo, mid, hi)
	}
}

// TestSpeedModelPriority: below-normal priority co-runners take no SMs
// from a job (only memory bandwidth), above-normal ones take first, while
// busy, the warp slots they occupy alone, and an idle co-runner takes
// nothing.
func TestSpeedModelPriority(t *testing.T) {
	tr := builtinJobModels(t).Truth
	on, off := "resnet50_infer", "resnet50_train"
	alone := tr.Shared(on, 100, 100, 0, nil)
	below := tr.Shared(on, 100, 100, 0, []CoShare{{Job: off, Pct: 100, Prio: 1}})
	equal := tr.Shared(on, 100, 100, 0, []CoShare{{Job: off, Pct: 100}})
	if !(equal < below && below < alone) {
		t.Errorf("online alone %.3f, next to a trainer below it %.3f, at its priority %.3f: want alone > below > equal", alone, below, equal)
	}
	idle := tr.Shared(off, 100, 100, 1, []CoShare{{Job: on, Pct: 100, Idle: 1}})
	busy := tr.Shared(off, 100, 100, 1, []CoShare{{Job: on, Pct: 100, Idle: 0.5}})
	if !(busy < idle) || idle != tr.Alone(off, 100) {
		t.Errorf("trainer below an idle service %.3f (alone %.3f), a half-busy one %.3f", idle, tr.Alone(off, 100), busy)
	}
}

// TestSpeedModelOccupancyAndMemory: a busy co-runner above a job takes
// the warp slots it occupies alone, not its whole share, so a trainer
// below a busy service keeps some speed, and keeps more below a service
// that occupies less; a co-runner slowed by priority loads memory less
// than one running at its whole share.
func TestSpeedModelOccupancyAndMemory(t *testing.T) {
	tr := builtinJobModels(t).Truth
	svc, trn := "resnet50_infer", "resnet50_train"
	tests := []struct {
		name      string
		svcPct    float64
		wantAbove float64 // lower bound on the trainer's speed
	}{
		{"service at 100 %", 100, 0.05},
		{"service at 50 %", 50, 0.2},
	}
	prev := 0.0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tr.Shared(trn, 100, 100, 1, []CoShare{{Job: svc, Pct: tc.svcPct}})
			if got <= tc.wantAbove || got >= tr.Alone(trn, 100) || got <= prev {
				t.Errorf("trainer below a busy service at %.0f %%: %.3f, want above %.2f and %.3f, below alone %.3f", tc.svcPct, got, tc.wantAbove, prev, tr.Alone(trn, 100))
			}
			prev = got
		})
	}
	// The service's memory load from two trainers: at priority 1 below a
	// third busy service they run slower and move less data than at 0.
	self := CoShare{Job: svc, Pct: 100}
	low := tr.memLoad(self, 100, []CoShare{{Job: trn, Pct: 100, Prio: 1}, {Job: trn, Pct: 100, Prio: 1}})
	same := tr.memLoad(self, 100, []CoShare{{Job: trn, Pct: 100}, {Job: trn, Pct: 100}})
	alone := 2 * curveAt(tr.dram[trn], 100)
	if !(low < same && same < alone) {
		t.Errorf("memory load of two trainers: %.3f below the service, %.3f beside it, %.3f at their whole shares: want rising", low, same, alone)
	}
}
