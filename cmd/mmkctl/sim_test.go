package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/sim/jobsim"
)

func TestSimKernels(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "t.svg")
	out, err := mmkctl(t, "sim", "kernels", "-o", "json", "--duration", "300ms", "--parallel", "2",
		"--task", "hp:resnet50_infer_bs1:0:think=2ms", "--task", "lp:vgg19_train_bs32:5",
		"--policy", "fifo,fikit", "--timeline", svg, "--timeline-window", "100ms+10ms")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []map[string]any   `json:"results"`
		GPUBusy map[string]float64 `json:"gpu_busy"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got.Results) != 4 || len(got.GPUBusy) != 2 {
		t.Fatalf("%d results, %d busy fractions: %s", len(got.Results), len(got.GPUBusy), out)
	}
	for _, key := range []string{"policy", "task", "requests", "p50_ms", "p99_ms", "slowdown_p50", "slowdown_p99", "throughput_rps"} {
		if _, ok := got.Results[0][key]; !ok {
			t.Errorf("result has no %q: %v", key, got.Results[0])
		}
	}
	if r := got.Results[2]; r["policy"] != "fikit" || r["task"] != "hp" || r["requests"].(float64) < 40 {
		t.Errorf("fikit HP row: %v", r)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(data), "<svg") || strings.Count(string(data), "<rect") < 50 {
		t.Fatalf("timeline: %v, %d bytes", err, len(data))
	}
}

func TestSimKernelsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "kernels"}, "flag --task: give at least one task"},
		{[]string{"sim", "kernels", "--task", "a:nosuch:0"}, `flag --task a: trace "nosuch"`},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:11"}, `PRIORITY "11"`},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--policy", "lottery"}, `flag --policy: policy "lottery"`},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--duration", "0s"}, "flag --duration"},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--timeline", "x.svg", "--timeline-window", "5ms"}, "flag --timeline-window"},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--gpu", "tpu", "--duration", "10ms"}, "gpu model"},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--hold", "wait", "--duration", "10ms"}, "hold mode"},
		{[]string{"sim", "kernels", "--task", "a:resnet50_infer_bs1:0", "--epsilon", "0s"}, "flag --epsilon: 0s must be positive"},
	}
	for _, tt := range tests {
		if _, err := mmkctl(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestSimJobs(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "cdf.svg")
	placed := filepath.Join(t.TempDir(), "placements.txt")
	out, err := mmkctl(t, "sim", "jobs", "--workload", "testbed", "--gpus", "2", "--policy", "default,mmk", "-o", "json", "--plot", svg,
		"--placements-out", placed, "--placements-top", "5")
	if err != nil {
		t.Fatal(err)
	}
	// The groups mmk placed together: run keys the campaign reads, the
	// most frequent first, each at a campaign percentage.
	runs, err := readRunKeys(placed)
	if err != nil || len(runs) != 5 {
		t.Fatalf("placements: %v, %v", runs, err)
	}
	for _, r := range runs {
		for _, m := range r {
			if !slices.Contains([]int{10, 20, 30, 50, 70, 100}, m.Percent) || len(r) < 2 {
				t.Errorf("placement %s: not a group at a campaign percentage", r.Key())
			}
		}
	}
	var got struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got.Results) != 2 || got.Results[1]["policy"] != "mmk" || got.Results[1]["workload"] != "testbed" {
		t.Fatalf("results: %s", out)
	}
	for _, key := range []string{"avg_jct_s", "makespan_s", "stp", "reconfigs", "slo_attainment"} {
		if v, ok := got.Results[1][key].(float64); !ok || (key != "reconfigs" && v <= 0) {
			t.Errorf("result %q = %v", key, got.Results[1][key])
		}
	}
	data, err := os.ReadFile(svg)
	if err != nil || strings.Count(string(data), "<polyline") != 2 {
		t.Fatalf("plot: %v, %d bytes", err, len(data))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "fair"}, `flag --policy: policy "fair"`},
		{[]string{"--policy", "mmk+turbo"}, `option "turbo"`},
		{[]string{"--load", "0"}, "flag --load: 0"},
		{[]string{"--slo-factor", "-2"}, "flag --slo-factor: -2"},
		{[]string{"--oracle-error", "-1"}, "flag --oracle-error: -1"},
		{[]string{"--oracle-error", "NaN"}, "flag --oracle-error: NaN"},
		{[]string{"--policy", "mmk", "--oracle-error", "0.1"}, "flag --oracle-error: 0.1, but no policy"},
		{[]string{"--gpus", "0"}, "flag --gpus: 0"},
		{[]string{"--gpu-model", "V100"}, "flag --gpu-model"},
		{[]string{"--workload", "openb:x"}, "flag --workload"},
		{[]string{"--placements-out", filepath.Join(t.TempDir(), "p"), "--placements-percents", "5,x"}, `flag --placements-percents: "x"`},
	} {
		_, err := mmkctl(t, append([]string{"sim", "jobs"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSimJobsDefaultPolicies: sim jobs compares by default with every
// baseline a user could pick, mps-prio (plain MPS with the trainers at
// client priority 1, the strongest: docs/results/partition.md) among
// them (issue 37, item 7), and its help says so.
func TestSimJobsDefaultPolicies(t *testing.T) {
	cmd, _, err := newRootCommand().Find([]string{"sim", "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	def := cmd.Flags().Lookup("policy").DefValue
	policies := strings.Split(def, ",")
	for _, p := range []string{"default", "mps", "mps-prio", "miso", "miger", "mmk"} {
		if !slices.Contains(policies, p) {
			t.Errorf("default policies %q lack %s", def, p)
		}
	}
	for _, p := range policies {
		if _, err := jobsim.ParsePolicy(p); err != nil {
			t.Errorf("default policy %q: %v", p, err)
		}
	}
	help, err := mmkctl(t, "sim", "jobs", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if want := "--policy " + def; !strings.Contains(help, want) {
		t.Errorf("help's usage line lacks %q:\n%s", want, help)
	}
}
