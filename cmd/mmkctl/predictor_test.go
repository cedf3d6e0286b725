package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/predictor"
)

// writeDataset writes a small synthetic dataset with alone runs.
func writeDataset(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := predictor.WriteHeader(&b, predictor.Header{"gpu": "synthetic"}, []string{"gpu"}); err != nil {
		t.Fatal(err)
	}
	jobs := map[string]float64{"resnet50_infer": 5, "bert_train": 360}
	for job, base := range jobs {
		for _, co := range []int{0, 1, 2} {
			for pct := 10; pct <= 100; pct += 10 {
				speed := math.Min(1, float64(pct)/60) / (1 + float64(co)/2)
				run := predictor.Run{{Job: job, Percent: pct}}.Key()
				for k := range co {
					run += fmt.Sprintf("+other%d_train@50", k)
				}
				s := predictor.Sample{Run: run, Job: job, Kind: predictor.KindOf(job), Batch: 8, MPSPercent: pct, SMs: 132, CoRunners: co,
					JobUtil: predictor.Util{SM: 80}, CoFeatures: predictor.CoFeatures{CoUtil: predictor.Util{SM: 40 * float64(co)}}, RunUtil: predictor.Util{SM: 80 * speed},
					ItemsPerS: base * speed, IterMs: base / speed}
				b.WriteString(strings.Join(s.Record(), ",") + "\n")
			}
		}
	}
	path := filepath.Join(t.TempDir(), "samples.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPredictorCommands(t *testing.T) {
	data := writeDataset(t)
	model := filepath.Join(t.TempDir(), "model.json")
	if _, err := mmkctl(t, "predictor", "train", "--data", data, "--out", model, "--trees", "20"); err != nil {
		t.Fatal(err)
	}
	out, err := mmkctl(t, "predictor", "eval", "--model", model, "--data", data)
	if err != nil || !strings.Contains(out, "bert_train") || !strings.Contains(out, "all") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	out, err = mmkctl(t, "predictor", "compare", "--data", data, "-o", "json", "--trees", "20", "--seeds", "1,2", "--models", "rf,lr,gbrt", "-q")
	if err != nil {
		t.Fatal(err)
	}
	var cmp predictor.ProtocolResult
	if err := json.Unmarshal([]byte(out), &cmp); err != nil || len(cmp.Models) != 3 || cmp.Models[0].Model != "rf" || len(cmp.Models[0].Configs) != 2 ||
		len(cmp.Models[0].TypeOut) != 2 || cmp.Floor.Samples != 0 || cmp.Best == "" {
		t.Fatalf("compare JSON %v: %s", err, out)
	}
	out, err = mmkctl(t, "predictor", "compare", "--data", data, "--trees", "10", "--seeds", "3", "--models", "rf,tree", "-q")
	if err != nil || !strings.Contains(out, "noise floor: none") || !strings.Contains(out, "best on configuration-disjoint splits") {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	out, err = mmkctl(t, "predictor", "predict", "--model", model, "--data", data, "--job", "bert_train", "--mps", "50", "--co", "resnet50_infer@50")
	if err != nil || !strings.Contains(out, "items/s (throughput)") {
		t.Fatalf("predict: %v\n%s", err, out)
	}
}

func TestPredictorErrors(t *testing.T) {
	data := writeDataset(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	raw, _ := os.ReadFile(data)
	os.WriteFile(bad, []byte(strings.Replace(string(raw), ",offline,8,", ",offline,eight,", 1)), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"predictor", "train", "--data", bad, "--out", "x.json"}, "column 4 (batch): \"eight\""},
		{[]string{"predictor", "train", "--data", data, "--out", "x.json", "--trees", "0"}, "flag --trees"},
		{[]string{"predictor", "eval", "--model", "nope.json", "--data", data}, "flag --model"},
		{[]string{"predictor", "compare", "--data", data, "--test", "1.5"}, "flag --test"},
		{[]string{"predictor", "train", "--data", data, "--out", "x.json", "--model", "svm"}, `model kind "svm"`},
		{[]string{"predictor", "compare", "--data", data, "--seeds", "1,x"}, `flag --seeds: "x"`},
		{[]string{"predictor", "compare", "--data", data, "--models", "rf,svm", "-q"}, `model "svm" is not one of`},
	}
	for _, tt := range tests {
		if _, err := mmkctl(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestPredictorCompareNamesItsMetric: compare's table says its numbers
// are mean relative errors, and --plot draws them (issue 37, item 7).
func TestPredictorCompareNamesItsMetric(t *testing.T) {
	data := writeDataset(t)
	svg := filepath.Join(t.TempDir(), "compare.svg")
	out, err := mmkctl(t, "predictor", "compare", "--data", data, "--trees", "10", "--seeds", "1", "--models", "rf,lr", "-q", "--plot", svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mean relative error", "|predicted - measured| / measured", "CONFIG_SPLIT_MRE", "LEAVE_TYPE_OUT_MRE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	plot := string(b)
	for _, want := range []string{"<svg", "mean relative error", ">rf<", ">lr<", "configuration-disjoint splits", "each job type left out"} {
		if !strings.Contains(plot, want) {
			t.Errorf("plot lacks %q:\n%s", want, plot)
		}
	}
	if n := strings.Count(plot, `class="bar"`); n != 4 {
		t.Errorf("plot has %d bars, want 4 (2 models x config split, type out):\n%s", n, plot)
	}
}
