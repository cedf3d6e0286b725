package main

import (
	"bytes"
	"encoding/json"
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
				if co > 0 {
					run += "+other_train@50"
				}
				s := predictor.Sample{Run: run, Job: job, Kind: predictor.KindOf(job), Batch: 8, MPSPercent: pct, SMs: 132, CoRunners: co,
					JobUtil: predictor.Util{SM: 80}, CoUtil: predictor.Util{SM: 40 * float64(co)}, RunUtil: predictor.Util{SM: 80 * speed},
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
	out, err = mmkctl(t, "predictor", "compare", "--data", data, "-o", "json", "--trees", "20")
	if err != nil {
		t.Fatal(err)
	}
	var cmp struct {
		Models []struct {
			Model    string  `json:"model"`
			AbsError float64 `json:"abs_error"`
			RelError float64 `json:"rel_error"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &cmp); err != nil || len(cmp.Models) != 3 || cmp.Models[0].Model != "rf" {
		t.Fatalf("compare JSON %v: %s", err, out)
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
	}
	for _, tt := range tests {
		if _, err := mmkctl(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
