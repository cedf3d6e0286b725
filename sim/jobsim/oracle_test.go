package jobsim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/trace"
)

// oracleFor is the oracle of a simulation of jobs under policy.
func oracleFor(t *testing.T, policy string, sigma float64, jobs ...trace.SimJob) *oracle {
	t.Helper()
	cfg := config(t, policy, 1, jobs...)
	cfg.OracleError = sigma
	s, err := newSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newOracle(s, sigma)
}

// TestOraclePolicyDecidesWithTheTruth: a policy with the oracle option
// decides with the ground truth (its predictions are the speeds the jobs
// run at), one without it with the predictor.
func TestOraclePolicyDecidesWithTheTruth(t *testing.T) {
	jobs := mustSynthetic(t, 0, 6, 3)
	for _, tc := range []struct {
		policy string
		exact  bool
	}{
		{JobMMK + "+" + OptOracle, true},
		{JobMMK, false},
	} {
		r, err := Simulate(config(t, tc.policy, 1, jobs...))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.PredictionError < 1e-9; got != tc.exact {
			t.Errorf("%s: median prediction error %.4f: want exact %v", tc.policy, r.PredictionError, tc.exact)
		}
	}
}

// TestOracleIsTheGroundTruth: the oracle answers what the ground truth
// runs: a trainer below a service at priority 1 keeps its share but for
// the warp slots the service occupies while busy, the service counts by
// its type's mean load,
// and without priority the trainer takes SMs from the service.
func TestOracleIsTheGroundTruth(t *testing.T) {
	m := builtinJobModels(t).Truth
	svcs := []trace.SimJob{
		{ID: "s1", Type: "resnet50_infer", Online: true, Work: time.Minute, Load: 0.1, MemoryMiB: 1246},
		{ID: "s2", Type: "resnet50_infer", Online: true, Work: time.Minute, Load: 0.3, MemoryMiB: 1246},
	}
	trainer := trace.SimJob{ID: "t", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 9000}
	jobs := append(svcs, trainer)
	svc := partitioner.Job{ID: "s1", Type: "resnet50_infer", Online: true}
	tr := partitioner.Job{ID: "t", Type: "vgg19_train"}
	const sms, gpuSMs = 98, 108
	frac := float64(sms) / gpuSMs
	for _, tc := range []struct {
		policy      string
		prio        int
		job         partitioner.Job
		co          partitioner.Job
		coIdle      float64
		coPrio, pct int
	}{
		{JobMMK + "+" + OptOracle, 1, tr, svc, 0.8, 0, 100}, // mean load of resnet50_infer: 0.2
		{JobMMK + "+" + OptOracle, 0, svc, tr, 0, 1, 100},
		{JobMMK + "-" + OptPriority + "+" + OptOracle, 0, svc, tr, 0, 0, 50},
	} {
		t.Run(tc.policy+"/"+tc.job.ID, func(t *testing.T) {
			o := oracleFor(t, tc.policy, 0, jobs...)
			got, err := o.Speed(tc.job, sms, gpuSMs, tc.pct, []partitioner.Share{{Job: tc.co, Percent: 100}})
			if err != nil {
				t.Fatal(err)
			}
			want := m.Shared(tc.job.Type, float64(tc.pct)*frac, 100*frac, tc.prio, []CoShare{{Job: tc.co.Type, Pct: 100 * frac, Idle: tc.coIdle, Prio: tc.coPrio}})
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("speed %.6f, want the ground truth's %.6f", got, want)
			}
		})
	}
	plain := oracleFor(t, JobMMK+"-"+OptPriority+"+"+OptOracle, 0, jobs...)
	prio := oracleFor(t, JobMMK+"+"+OptOracle, 0, jobs...)
	co := []partitioner.Share{{Job: tr, Percent: 100}}
	a, _ := plain.Speed(svc, sms, gpuSMs, 100, co)
	b, _ := prio.Speed(svc, sms, gpuSMs, 100, co)
	if !(b > a) {
		t.Errorf("service next to a trainer: %.4f with priority, %.4f without: want priority to protect it", b, a)
	}
}

// TestOracleError: with an error each answer is off by a factor drawn
// from the question, the same in any order of the co-runners, and the
// errors spread as exp(E·z).
func TestOracleError(t *testing.T) {
	jobs := []trace.SimJob{
		{ID: "a", Type: "resnet50_train", Work: time.Minute, MemoryMiB: 4268},
		{ID: "b", Type: "vgg19_train", Work: time.Minute, MemoryMiB: 9000},
		{ID: "c", Type: "bert_train", Work: time.Minute, MemoryMiB: 9000},
	}
	exact := oracleFor(t, JobMMK+"+"+OptOracle, 0, jobs...)
	noisy := oracleFor(t, JobMMK+"+"+OptOracle, 0.1, jobs...)
	a, b, c := partitioner.Job{ID: "a", Type: "resnet50_train"}, partitioner.Job{ID: "b", Type: "vgg19_train"}, partitioner.Job{ID: "c", Type: "bert_train"}
	bc := []partitioner.Share{{Job: b, Percent: 50}, {Job: c, Percent: 30}}
	cb := []partitioner.Share{{Job: c, Percent: 30}, {Job: b, Percent: 50}}
	x, _ := noisy.Speed(a, 98, 108, 100, bc)
	y, _ := noisy.Speed(a, 98, 108, 100, cb)
	if x != y {
		t.Errorf("speeds %v and %v for the same co-runners in another order: want one answer", x, y)
	}
	var logs []float64
	for p := 10; p <= 100; p += 10 {
		for _, co := range [][]partitioner.Share{nil, bc, {{Job: b, Percent: p}}} {
			e, err := exact.Speed(a, 98, 108, p, co)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := noisy.Speed(a, 98, 108, p, co)
			logs = append(logs, math.Log(n/e))
		}
	}
	sd := 0.0
	for _, l := range logs {
		sd += l * l
	}
	sd = math.Sqrt(sd / float64(len(logs)))
	if sd < 0.05 || sd > 0.2 {
		t.Errorf("log errors' RMS %.3f over %d questions: want about 0.1", sd, len(logs))
	}
	if _, err := exact.Speed(partitioner.Job{ID: "x", Type: "gpt5"}, 98, 108, 50, nil); err == nil || !strings.Contains(err.Error(), `"gpt5"`) {
		t.Errorf("unknown type: error %v, want it named", err)
	}
}

// nonMonotone is an estimator whose online jobs run at 100 % at 0.3 of
// what they get below it (a predictor need not be monotone).
type nonMonotone struct{ partitioner.Estimator }

func (e nonMonotone) Speed(j partitioner.Job, sms, gpuSMs, pct int, co []partitioner.Share) (float64, error) {
	v, err := e.Estimator.Speed(j, sms, gpuSMs, pct, co)
	if j.Online && pct == 100 {
		v *= 0.3
	}
	return v, err
}

// TestServiceNeedFitsAlone: under priority shares a service runs at
// 100 %; where the predictor gives it less there than at its demand, its
// need is still met alone and it runs.
func TestServiceNeedFitsAlone(t *testing.T) {
	svc := trace.SimJob{ID: "s", Type: "resnet50_infer", Online: true, Work: time.Minute, Load: 0.9, MemoryMiB: 1246}
	cfg := config(t, JobMMK, 1, svc)
	cfg.Est = nonMonotone{cfg.Est}
	r, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Unfinished != 0 {
		t.Errorf("%d jobs unfinished: want the service placed alone", r.Unfinished)
	}
}
