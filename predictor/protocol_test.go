package predictor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// repSamples is a campaign with repetitions: jobs alone at 100 % and 50 %
// and pairs, each configuration measured reps times with multiplicative
// noise of sd noise; the truth falls with less share and a co-runner.
func repSamples(reps int, noise float64, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 3))
	jobs := []string{"resnet50_infer", "bert_train", "vgg19_train", "mobilenet_infer", "densenet201_train"}
	base := map[string]float64{"resnet50_infer": 5, "bert_train": 360, "vgg19_train": 900, "mobilenet_infer": 3, "densenet201_train": 150}
	sm := map[string]float64{"resnet50_infer": 60, "bert_train": 70, "vgg19_train": 90, "mobilenet_infer": 40, "densenet201_train": 50}
	var cfgs []Run
	for _, j := range jobs {
		cfgs = append(cfgs, Run{{Job: j, Percent: 100}}, Run{{Job: j, Percent: 50}})
	}
	for a := range jobs {
		for b := a + 1; b < len(jobs); b++ {
			for _, p := range []int{50, 100} {
				cfgs = append(cfgs, AsPlaced(Run{{Job: jobs[a], Percent: 100}, {Job: jobs[b], Percent: p}}))
			}
		}
	}
	var out []Sample
	for rep := range reps {
		for _, r := range cfgs {
			for _, m := range r {
				co, _ := r.Without(m.Job, m.Percent, m.Priority)
				s := sample(r.Key(), m.Job, m.Percent, len(co), 0)
				s.Rep, s.MPSPriority = rep, m.Priority
				s.JobUtil = Util{SM: sm[m.Job], DRAM: sm[m.Job] / 2}
				speed := math.Min(1, float64(m.Percent)/70)
				for _, c := range co {
					s.CoUtil = s.CoUtil.Add(Util{SM: sm[c.Job] * float64(c.Percent) / 100, DRAM: sm[c.Job] / 2})
					s.CoMPSPct += c.Percent
					load := sm[c.Job] * float64(c.Percent) / 100
					if c.Priority < m.Priority {
						s.CoAboveSM += load
						load *= 1.5
					} else if c.Priority > m.Priority {
						s.CoBelowSM += load
						load *= 0.3
					}
					speed /= 1 + load/100
				}
				speed *= math.Exp(noise * rng.NormFloat64())
				if s.Kind == Online {
					s.IterMs, s.ItemsPerS = base[m.Job]/speed, 0
				} else {
					s.ItemsPerS, s.IterMs = base[m.Job]*speed, 0
				}
				s.IterCV = noise
				out = append(out, s)
			}
		}
	}
	return out
}

// TestFloor: with no noise the floor is 0; with noise it grows with the
// noise and counts every repeated sample; one repetition gives none.
func TestFloor(t *testing.T) {
	if f := Floor(repSamples(3, 0, 1)); f.RelError > 1e-12 || f.Reps != 3 || f.Samples != len(repSamples(3, 0, 1)) {
		t.Errorf("noiseless floor %+v", f)
	}
	small, large := Floor(repSamples(3, 0.02, 1)), Floor(repSamples(3, 0.08, 1))
	if !(small.RelError > 0.01 && small.RelError < 0.04 && large.RelError > 3*small.RelError) {
		t.Errorf("floors %.4f (noise 2 %%) and %.4f (8 %%): want about 0.02*1.2*0.8 and four times that", small.RelError, large.RelError)
	}
	if len(small.PerCoRunner) != 2 || small.PerCoRunner[0].CoRunners != 0 || math.Abs(small.WithinWindow-0.02) > 1e-9 {
		t.Errorf("per co-runner %+v, within-window %v", small.PerCoRunner, small.WithinWindow)
	}
	if f := Floor(repSamples(1, 0.05, 1)); f.Samples != 0 || f.Configs != 0 {
		t.Errorf("one repetition: floor over %d samples", f.Samples)
	}
}

// TestSplitsHaveNoLeak: a configuration's repetitions and members fall on
// one side; profile runs always train; leaving a type out holds out every
// run it is in but its profile.
func TestSplitsHaveNoLeak(t *testing.T) {
	samples := repSamples(3, 0.03, 2)
	for seed := uint64(1); seed <= 5; seed++ {
		train, test := SplitConfigs(samples, 0.2, seed)
		if len(train)+len(test) != len(samples) || len(test) == 0 {
			t.Fatalf("seed %d: %d + %d of %d", seed, len(train), len(test), len(samples))
		}
		in := map[string]bool{}
		for _, s := range train {
			in[s.Run] = true
		}
		for _, s := range test {
			if in[s.Run] || IsProfile(s) {
				t.Fatalf("seed %d: run %s (profile %v) in both sets", seed, s.Run, IsProfile(s))
			}
		}
	}
	train, test := LeaveTypeOut(samples, "bert_train")
	for _, s := range train {
		run, _ := ParseRunKey(s.Run)
		for _, m := range run {
			if m.Job == "bert_train" && !IsProfile(s) {
				t.Fatalf("trained on %s with bert_train", s.Run)
			}
		}
	}
	if len(test) == 0 || !(len(Bases(train)) == 5) {
		t.Fatalf("%d held out, bases of %d types", len(test), len(Bases(train)))
	}
}

// TestRunProtocol: every model gets a config-split error per seed and a
// fold per job type; the best is the lowest and comes near the noise
// floor of the data.
func TestRunProtocol(t *testing.T) {
	samples := repSamples(3, 0.03, 4)
	cfg := DefaultForest(20)
	cfg.Trees = 30
	var fits int
	res, err := RunProtocol(samples, ProtocolSpec{Models: []string{"rf", "gbrt", "rf-per-type", "lr", "rf+co"}, Seeds: []uint64{1, 2, 3}, Test: 0.25, Forest: cfg, TypeOut: true,
		Progress: func(string, string) { fits++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Models) != 5 || fits != 5*(3+5) {
		t.Fatalf("%d models, %d fits; want 5 and 40", len(res.Models), fits)
	}
	errs := map[string]float64{}
	for _, m := range res.Models {
		if len(m.Configs) != 3 || len(m.TypeOut) != 5 || m.ConfigsMin > m.ConfigsMean || m.ConfigsMax < m.ConfigsMean {
			t.Fatalf("%s: %+v", m.Model, m)
		}
		errs[m.Model] = m.ConfigsMean
	}
	for name, e := range errs {
		if e < errs[res.Best] {
			t.Errorf("best %s (%.4f), but %s has %.4f", res.Best, errs[res.Best], name, e)
		}
	}
	if errs[res.Best] > 2*res.Floor.RelError+0.01 || errs["rf"] > 3*res.Floor.RelError+0.03 {
		t.Errorf("errors %v against the floor %.4f: the best should come near the floor", errs, res.Floor.RelError)
	}
	if _, err := RunProtocol(samples, ProtocolSpec{Models: []string{"svm"}, Seeds: []uint64{1}, Test: 0.2, Forest: cfg}); err == nil {
		t.Error("an unknown model was accepted")
	}
}

// TestBoostFitsWhatOneTreeCannot: on a smooth nonlinear truth, boosted
// shallow trees predict held-out rows better than one tree of the same
// depth and than the mean, and the same seed gives the same model.
func TestBoostFitsWhatOneTreeCannot(t *testing.T) {
	x, y := randomData(600, 4, 11)
	xt, yt := randomData(300, 4, 12)
	cfg := DefaultBoost(1)
	b, err := GrowBoost(x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]int, len(x))
	for i := range rows {
		rows[i] = i
	}
	tree := GrowTree(x, y, rows, cfg.Tree, nil)
	mean := 0.0
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	var eb, et, em float64
	for i := range xt {
		eb += math.Pow(b.Predict(xt[i])-yt[i], 2)
		et += math.Pow(tree.Predict(xt[i])-yt[i], 2)
		em += math.Pow(mean-yt[i], 2)
	}
	if !(eb < 0.8*et && eb < 0.2*em) {
		t.Errorf("squared errors: boost %.1f, one tree %.1f, mean %.1f", eb, et, em)
	}
	again, _ := GrowBoost(x, y, cfg)
	if !reflect.DeepEqual(b, again) {
		t.Error("the same seed grew another model")
	}
	for _, bad := range []BoostConfig{{Rounds: 0, LearnRate: 0.1, Subsample: 1}, {Rounds: 5, LearnRate: 0, Subsample: 1}, {Rounds: 5, LearnRate: 0.1, Subsample: 1.5}} {
		if _, err := GrowBoost(x, y, bad); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

// TestModelKindsRoundTrip: every kind trains, saves, loads and predicts
// the same; per-type forests keep to their own type's rows.
func TestModelKindsRoundTrip(t *testing.T) {
	samples := repSamples(2, 0.02, 5)
	cfg := DefaultForest(20)
	cfg.Trees = 10
	for _, kind := range kinds {
		for _, coid := range []bool{false, true} {
			cfg.CoIdentity = coid
			m, err := Train(kind, samples, cfg)
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			path := t.TempDir() + "/m.json"
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			back, err := LoadModel(path)
			if err != nil {
				t.Fatalf("%s co-identity %v: %v", kind, coid, err)
			}
			for _, s := range samples[:20] {
				a, _ := m.Predict(InputOf(s))
				b, err := back.Predict(InputOf(s))
				if err != nil || a != b {
					t.Fatalf("%s: %v against %v after a round trip (%v)", kind, a, b, err)
				}
			}
			if want := len(m.Schema.Jobs) + len(numericFeatures) + len(extFeatures); coid != (len(m.Schema.Features()) == want+len(m.Schema.Jobs)) {
				t.Errorf("%s co-identity %v: %d features", kind, coid, len(m.Schema.Features()))
			}
		}
	}
}

// TestEstimatorPriorities: with a model that learned priorities, an
// offline job below an online one is predicted slower at
// OfflinePriority 1 than at 0, and the online job faster.
func TestEstimatorPriorities(t *testing.T) {
	samples := repSamples(2, 0.01, 6)
	cfg := DefaultForest(20)
	cfg.Trees = 40
	m, err := Train(KindForest, samples, cfg)
	if err != nil {
		t.Fatal(err)
	}
	speeds := map[string]float64{}
	for _, prio := range []int{0, 1} {
		est := Estimator{Model: m, Profiles: Profiles(samples), OfflinePriority: prio}
		off := partitionerJob("vgg19_train", false)
		on := partitionerJob("resnet50_infer", true)
		so, err := est.Speed(off, 132, 132, 100, shares(on, 100))
		if err != nil {
			t.Fatal(err)
		}
		sn, err := est.Speed(on, 132, 132, 100, shares(off, 100))
		if err != nil {
			t.Fatal(err)
		}
		speeds[fmt.Sprint("offline", prio)], speeds[fmt.Sprint("online", prio)] = so, sn
	}
	if !(speeds["offline1"] < speeds["offline0"] && speeds["online1"] > speeds["online0"]) {
		t.Errorf("speeds %v: want the offline job slower and the online one faster under priority", speeds)
	}
}

// TestDefaultModelIsDefaultKind: mmkctl's default model name trains the
// kind mmkd trains.
func TestDefaultModelIsDefaultKind(t *testing.T) {
	if m, ok := ModelNames[DefaultModel]; !ok || m.Kind != DefaultKind || m.CoIdentity {
		t.Errorf("model %q is %+v (known %v), want kind %s without co-runner identity", DefaultModel, m, ok, DefaultKind)
	}
}

// TestFloorIsUnbiased: with multiplicative noise of sd s, a perfect
// model's mean relative error is about s·sqrt(2/π); the floor finds it
// for pairs and triples alike, where the unscaled one is sqrt(2) and
// sqrt(1.5) times higher.
func TestFloorIsUnbiased(t *testing.T) {
	const noise = 0.05
	want := noise * math.Sqrt(2/math.Pi)
	for _, reps := range []int{2, 3} {
		var samples []Sample
		for seed := uint64(1); seed <= 8; seed++ {
			for _, s := range repSamples(reps, noise, seed) {
				s.Run += fmt.Sprintf("#%d", seed) // configurations of their own
				samples = append(samples, s)
			}
		}
		f := Floor(samples)
		if math.Abs(f.RelError/want-1) > 0.1 {
			t.Errorf("%d repetitions: floor %.4f, want %.4f within 10 %%", reps, f.RelError, want)
		}
		if r := f.PairedError / f.RelError; math.Abs(r-math.Sqrt(float64(reps)/float64(reps-1))) > 1e-9 {
			t.Errorf("%d repetitions: unscaled / scaled %.4f, want sqrt(%d/%d)", reps, r, reps, reps-1)
		}
	}
}
