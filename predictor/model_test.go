package predictor

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// synthSamples is a dataset shaped like a campaign's: jobs whose target
// falls with less MPS share and more co-runner load.
func synthSamples(n int, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	jobs := []string{"resnet50_infer", "bert_train", "vgg19_train", "mobilenet_infer"}
	base := map[string]float64{"resnet50_infer": 5, "bert_train": 360, "vgg19_train": 900, "mobilenet_infer": 3}
	var out []Sample
	for i := range n {
		j := jobs[i%len(jobs)]
		pct := 10 * (1 + rng.IntN(10))
		co := rng.IntN(3)
		load := float64(co) * (20 + 60*rng.Float64())
		speed := math.Min(1, float64(pct)/60) / (1 + load/150)
		s := sample("run", j, pct, co, 0)
		s.CoUtil = Util{SM: load, DRAM: load / 2}
		if s.Kind == Online {
			s.IterMs = base[j] / speed
		} else {
			s.ItemsPerS = base[j] * speed
		}
		out = append(out, s)
	}
	return out
}

func TestTrainEvaluateCompare(t *testing.T) {
	all := synthSamples(600, 1)
	train, test := Split(all, 0.2, 1)
	profiles := 0
	for _, s := range all {
		if IsProfile(s) {
			profiles++
		}
	}
	if len(train)+len(test) != 600 || len(test) != int(math.Round(0.2*float64(600-profiles))) {
		t.Fatalf("split %d/%d with %d profile samples", len(train), len(test), profiles)
	}
	for _, s := range test {
		if IsProfile(s) {
			t.Fatalf("profile sample %+v in the test set", s)
		}
	}
	schema := SchemaOf(train)
	byKind := map[string]*Evaluation{}
	for _, kind := range []string{KindForest, KindLinear, KindTree} {
		m, err := Train(kind, train, DefaultForest(len(schema.Features())))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Evaluate(m, test)
		if err != nil {
			t.Fatal(err)
		}
		byKind[kind] = ev
		if ev.Overall.N != len(test) || len(ev.PerJob) != 4 {
			t.Fatalf("%s: %+v", kind, ev)
		}
	}
	if rf := byKind[KindForest].Overall.RelError; rf > 0.05 || rf >= byKind[KindLinear].Overall.RelError {
		t.Fatalf("rf relative error %.3f (lr %.3f): want under 5 %% and below linear", rf, byKind[KindLinear].Overall.RelError)
	}
}

func TestModelSaveLoadAndSchema(t *testing.T) {
	samples := synthSamples(200, 2)
	m, err := Train(KindForest, samples, ForestConfig{Trees: 5, Tree: TreeConfig{MaxFeatures: 4}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	in := InputOf(samples[0])
	a, _ := m.Predict(in)
	b, _ := back.Predict(in)
	if a != b || a <= 0 {
		t.Fatalf("prediction %v after loading, %v before", b, a)
	}
	// A dataset with a job the model never saw.
	other := append(samples[:1:1], sample("x", "transformer_train", 50, 0, 100))
	if _, err := Evaluate(back, other); err == nil || !strings.Contains(err.Error(), "job types transformer_train are not in the model") {
		t.Fatalf("unknown job type: %v", err)
	}
	// Files that lie about themselves.
	data, _ := json.Marshal(m)
	for _, tt := range []struct{ from, to, want string }{
		{`"version":1`, `"version":7`, "version: 7"},
		{`"numeric":["mps_pct"`, `"numeric":["mps"`, "schema: features"},
		{`"f":0,`, `"f":999,`, "feature 999"},
		{`"kind":"random-forest"`, `"kind":"svm"`, `kind: "svm" is not one of`},
		{`"kind":"random-forest"`, `"kind":"tree"`, "must hold that model and no other"},
	} {
		doc := strings.Replace(string(data), tt.from, tt.to, 1)
		if doc == string(data) {
			t.Fatalf("%q not in the model file", tt.from)
		}
		if _, err := ReadModel(bytes.NewReader([]byte(doc))); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s -> %s: error %v, want %q", tt.from, tt.to, err, tt.want)
		}
	}
}

// smallForest is a 20-tree forest on synthetic samples, and the samples.
func smallForest(t *testing.T) ([]Sample, *Model) {
	t.Helper()
	samples := synthSamples(400, 3)
	for i := range samples {
		samples[i].RunUtil = samples[i].JobUtil
	}
	m, err := Train(KindForest, samples, ForestConfig{Trees: 20, Tree: TreeConfig{MaxFeatures: 5}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return samples, m
}

func TestModelSTP(t *testing.T) {
	samples, m := smallForest(t)
	prof := Profiles(samples)
	stp := ModelSTP{Model: m}
	alone, err := stp.STP(prof["bert_train"], 132, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	crowded, err := stp.STP(prof["bert_train"], 132, 30, []CoRunner{{Profile: prof["vgg19_train"], Percent: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if crowded >= alone {
		t.Fatalf("bert throughput %v at 30 %% with a co-runner, %v alone at 100 %%", crowded, alone)
	}
	if _, err := stp.STP(Profile{Job: "bert_train"}, 132, 50, nil); err == nil {
		t.Fatal("a job without a profile at 100 % was accepted")
	}
}
