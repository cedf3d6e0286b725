package jobsim

import (
	"math"
	"reflect"
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

// TestJobAloneRunsAtItsAloneSpeed: one job on one GPU finishes after its
// start-up plus its work under default sharing (STP 1); under MIG
// policies it gets the whole-GPU instance (98 of 108 SMs) and is slower.
func TestJobAloneRunsAtItsAloneSpeed(t *testing.T) {
	jm := builtinJobModels(t)
	job := trace.SimJob{ID: "a", Type: "resnet50_train", Arrival: 10 * time.Second, Work: 100 * time.Second, MemoryMiB: 4268}
	jt, _ := trace.LookupJobType(job.Type)
	alone := 100 + jt.Startup.Seconds()
	for _, p := range Policies() {
		t.Run(p, func(t *testing.T) {
			r, err := Simulate(Config{Jobs: []trace.SimJob{job}, Model: a100(t), GPUs: 1, Policy: p, Truth: jm.Truth, Est: jm.Est, Effects: jm.Effects})
			if err != nil {
				t.Fatal(err)
			}
			switch p {
			case JobDefault, JobMPS:
				if math.Abs(r.AvgJCTS-alone) > 1e-6 || math.Abs(r.STP-1) > 1e-9 {
					t.Errorf("JCT %.3f s, STP %.4f: want %.3f s and 1", r.AvgJCTS, r.STP, alone)
				}
			default:
				if r.AvgJCTS <= alone || r.STP >= 1 || r.Reconfigs != 0 {
					t.Errorf("JCT %.3f s, STP %.4f, %d MIG changes: want slower than %.3f s on 98 of 108 SMs, no change", r.AvgJCTS, r.STP, r.Reconfigs, alone)
				}
			}
			if r.Makespan != r.AvgJCTS || len(r.NormJCT) != 1 || r.Unfinished != 0 {
				t.Errorf("result %+v", r)
			}
			// One job runs (starting up included) for the whole makespan.
			if math.Abs(r.JobsPerGPU-1) > 1e-9 {
				t.Errorf("jobs per GPU %.4f, want 1", r.JobsPerGPU)
			}
			wantLayout, wantShare := "7g.80gb", 1.0
			if p == JobDefault || p == JobMPS {
				wantLayout, wantShare = "", 0
			}
			if r.MainLayout != wantLayout || math.Abs(r.MainLayoutShare-wantShare) > 1e-9 {
				t.Errorf("layout held longest %q (%.2f), want %q (%.2f)", r.MainLayout, r.MainLayoutShare, wantLayout, wantShare)
			}
		})
	}
}

// TestSimulateJobsIsDeterministic: same trace and seed, same results;
// a different workload seed changes them.
func TestSimulateJobsIsDeterministic(t *testing.T) {
	jm := builtinJobModels(t)
	run := func(seed uint64, policy string) *Result {
		r, err := Simulate(Config{Jobs: trace.SyntheticJobs(8, 4, seed), Model: a100(t), GPUs: 1, Policy: policy, Truth: jm.Truth, Est: jm.Est, Effects: jm.Effects})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, p := range Policies() {
		a, b, c := run(1, p), run(1, p), run(2, p)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ: %+v vs %+v", p, a, b)
		}
		if reflect.DeepEqual(a.NormJCT, c.NormJCT) {
			t.Errorf("%s: seeds 1 and 2 gave the same JCTs", p)
		}
	}
}

// TestMMKKeepsMIGUnderOnline: under mmk no MIG change happens while an
// online job runs on that GPU; miger does change it.
func TestMMKKeepsMIGUnderOnline(t *testing.T) {
	jm := builtinJobModels(t)
	jobs := []trace.SimJob{
		{ID: "on", Type: "densenet121_infer", Online: true, Work: 10 * time.Hour, MemoryMiB: 1222},
		{ID: "off1", Type: "vgg19_train", Arrival: time.Minute, Work: 10 * time.Minute, MemoryMiB: 7094},
		{ID: "off2", Type: "resnet152_train", Arrival: 2 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 4388},
		{ID: "off3", Type: "bert_train", Arrival: 3 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 2074},
		{ID: "off4", Type: "densenet201_train", Arrival: 4 * time.Minute, Work: 10 * time.Minute, MemoryMiB: 4468},
	}
	reconfigs := map[string]int{}
	for _, p := range []string{JobMMK, JobMIGER} {
		r, err := Simulate(Config{Jobs: jobs, Model: a100(t), GPUs: 1, Policy: p, Truth: jm.Truth, Est: jm.Est, Effects: jm.Effects})
		if err != nil {
			t.Fatal(err)
		}
		reconfigs[p] = r.Reconfigs
	}
	// The online job runs from the start to after every offline job ends.
	if reconfigs[JobMMK] != 0 {
		t.Errorf("mmk changed MIG %d times under a running online job", reconfigs[JobMMK])
	}
	if reconfigs[JobMIGER] == 0 {
		t.Errorf("miger never changed MIG: the test shows nothing")
	}
}

// TestSimulateJobsErrors: bad configurations are errors naming the fault.
func TestSimulateJobsErrors(t *testing.T) {
	jm := builtinJobModels(t)
	ok := trace.SimJob{ID: "a", Type: "resnet50_train", Work: time.Minute, MemoryMiB: 1}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no gpus", Config{Jobs: []trace.SimJob{ok}, Policy: JobMMK}, "gpus 0"},
		{"bad policy", Config{Jobs: []trace.SimJob{ok}, GPUs: 1, Policy: "fair"}, `policy "fair"`},
		{"bad type", Config{Jobs: []trace.SimJob{{ID: "x", Type: "gpt5", Work: time.Minute}}, GPUs: 1, Policy: JobDefault}, `unknown job type "gpt5"`},
		{"twice", Config{Jobs: []trace.SimJob{ok, ok}, GPUs: 1, Policy: JobDefault}, `job id "a" is given twice`},
		{"no work", Config{Jobs: []trace.SimJob{{ID: "z", Type: "resnet50_train"}}, GPUs: 1, Policy: JobDefault}, "work 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Model, tc.cfg.Truth, tc.cfg.Est = a100(t), jm.Truth, jm.Est
			_, err := Simulate(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestJobTooBigWaitsForever: a job no GPU can hold is reported
// unfinished, not simulated forever.
func TestJobTooBigWaitsForever(t *testing.T) {
	jm := builtinJobModels(t)
	jobs := []trace.SimJob{{ID: "big", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 1 << 30}, {ID: "ok", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 7094}}
	for _, p := range Policies() {
		r, err := Simulate(Config{Jobs: jobs, Model: a100(t), GPUs: 1, Policy: p, Truth: jm.Truth, Est: jm.Est, Effects: jm.Effects})
		if err != nil {
			t.Fatal(err)
		}
		if r.Unfinished != 1 || len(r.NormJCT) != 1 {
			t.Errorf("%s: unfinished %d, finished %d; want 1 and 1", p, r.Unfinished, len(r.NormJCT))
		}
	}
}

// TestSpeedModelFitsMeasurements: the ground truth reproduces its own
// alone measurements exactly and the co-located ones within 15 %.
func TestSpeedModelFitsMeasurements(t *testing.T) {
	jm := builtinJobModels(t)
	if got := jm.Truth.Alone("vgg19_train", 100); math.Abs(got-1) > 1e-9 {
		t.Errorf("alone at 100 %% = %.4f, want 1", got)
	}
	if jm.TruthError <= 0 || jm.TruthError > 0.15 {
		t.Errorf("ground truth error %.3f: want in (0, 0.15]", jm.TruthError)
	}
	lo, mid, hi := jm.Truth.Alone("vgg19_train", 20), jm.Truth.Alone("vgg19_train", 25), jm.Truth.Alone("vgg19_train", 30)
	if !(lo <= mid && mid <= hi) || jm.Truth.Alone("vgg19_train", 5) != jm.Truth.Alone("vgg19_train", 10)/2 {
		t.Errorf("interpolation: 20 %% %.3f, 25 %% %.3f, 30 %% %.3f", lo, mid, hi)
	}
}
