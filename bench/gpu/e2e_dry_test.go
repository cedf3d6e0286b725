// Package gpu holds the scripts run on the GPU machine (bench/gpu/*.sh,
// *.py); this test runs mmkd-e2e.sh's dry run in CI: every phase and
// round, mmkd with the fake backend, jobs that sleep instead of using a
// GPU, and the report with its timelines.
package gpu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestE2EDryRun: DRY=1 bench/gpu/mmkd-e2e.sh OUT fake runs two rounds of
// the five phases (mmk-nohook too) and reports them; every job of every phase and round
// finishes, and the report names the strongest simple alternative and
// the goal's verdicts. Needs python3 and curl (MMK_E2E_DRY_TEST=required,
// as in CI, fails instead of skipping without them).
func TestE2EDryRun(t *testing.T) {
	out := dryRun(t, "about a minute", "mmkd-e2e.sh", []string{"fake"}, "ROUNDS=2", "SERVE_S=2", "ALONE_S=1",
		"R50_ITERS=60", "VGG_ITERS=30", "BERT_ITERS=40", "DENSE_ITERS=30", "PHASE_MAX=60",
		"PHASES=alone baseline mps-prio mmk mmk-nohook")
	seen := map[string]int{}
	for _, r := range jsonLines[struct {
		Round  int             `json:"round"`
		Phase  string          `json:"phase"`
		Name   string          `json:"name"`
		Report json.RawMessage `json:"report"`
	}](t, filepath.Join(out, "e2e.jsonl")) {
		if strings.Contains(string(r.Report), "unfinished") {
			t.Errorf("round %d %s: %s unfinished", r.Round, r.Phase, r.Name)
		}
		seen[r.Phase]++
	}
	for _, p := range []string{"alone", "baseline", "mps-prio", "mmk", "mmk-nohook"} {
		if seen[p] != 12 {
			t.Errorf("phase %s: %d job lines, want 6 jobs x 2 rounds", p, seen[p])
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 round(s)", "Strongest simple alternative: **MPS, offline prio 1 (by hand)**", "- STP: mmk", "timeline-r1.svg", "kernel scheduling off (no hook)", "last launch s"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	for _, svg := range []string{"timeline-r0.svg", "timeline-r1.svg"} {
		if b, err := os.ReadFile(filepath.Join(out, svg)); err != nil || !strings.HasPrefix(string(b), "<svg") {
			t.Errorf("%s: %v", svg, err)
		}
	}
}

// TestE2EDryRunFourGPUs: GPUS=4 runs the twelve jobs (four online, eight
// offline); by hand, job i runs on GPU i mod 4 (its CUDA_VISIBLE_DEVICES),
// alone on the first; mmkd places all twelve on four fake GPUs (issue 39's
// run, as the CPU allows it), and the report says how long Algorithm 1
// took per decision.
func TestE2EDryRunFourGPUs(t *testing.T) {
	out := dryRun(t, "half a minute", "mmkd-e2e.sh", []string{"fake"}, "GPUS=4", "ROUNDS=1", "SERVE_S=2", "ALONE_S=1",
		"R50_ITERS=40", "VGG_ITERS=20", "BERT_ITERS=20", "DENSE_ITERS=20", "R152_ITERS=20", "TRANS_ITERS=20", "D121_ITERS=20", "PHASE_MAX=60",
		"PHASES=alone mps-prio mmk")
	seen := map[string]int{}
	gpus := map[string]map[string]int{}
	for _, r := range jsonLines[struct {
		Phase  string `json:"phase"`
		Name   string `json:"name"`
		Report struct {
			GPU        string `json:"gpu"`
			MMKJob     string `json:"mmk_job"`
			Unfinished bool   `json:"unfinished"`
		} `json:"report"`
	}](t, filepath.Join(out, "e2e.jsonl")) {
		if r.Report.Unfinished {
			t.Errorf("%s: %s unfinished", r.Phase, r.Name)
		}
		seen[r.Phase]++
		if gpus[r.Phase] == nil {
			gpus[r.Phase] = map[string]int{}
		}
		gpus[r.Phase][r.Report.GPU]++
	}
	for _, p := range []string{"alone", "mps-prio", "mmk"} {
		if seen[p] != 12 {
			t.Errorf("phase %s: %d job lines, want 12", p, seen[p])
		}
	}
	if g := gpus["mps-prio"]; g["GPU-dry-0"] != 3 || g["GPU-dry-1"] != 3 || g["GPU-dry-2"] != 3 || g["GPU-dry-3"] != 3 {
		t.Errorf("by hand: jobs per GPU %v, want 3 on each of four", g)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`round 0: \d+ decisions on 4 GPUs, [0-9.]+ ms each on average`).Match(report) {
		t.Errorf("the report does not give Algorithm 1's decision time on 4 GPUs:\n%s", report)
	}
	if g := gpus["alone"]; g["GPU-dry-0"] != 12 {
		t.Errorf("alone: jobs per GPU %v, want all 12 on the first", g)
	}
}

// TestE2EDryRunSimCase: JOBSET=sim runs three open-loop services (Poisson
// requests at their rates, every latency reported, the GPU time each
// request took and the busy share) and three trainers, in every phase:
// the case a simulator replay needs. With SLO set, mmkd gets the target
// with each service and the report judges every phase's requests by it.
func TestE2EDryRunSimCase(t *testing.T) {
	out := dryRun(t, "half a minute", "mmkd-e2e.sh", []string{"fake"}, "JOBSET=sim", "ROUNDS=1", "SERVE_S=2", "ALONE_S=1",
		"R50_ITERS=40", "VGG_ITERS=20", "BERT_ITERS=20", "PHASE_MAX=60", "PHASES=alone mps-prio mmk", "SLO=p99=1.5x")
	seen := map[string]int{}
	for _, r := range jsonLines[struct {
		Phase  string `json:"phase"`
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		Report struct {
			Rate       float64   `json:"rate"`
			LatMs      []float64 `json:"lat_ms"`
			ServiceMs  float64   `json:"service_ms"`
			Busy       float64   `json:"busy"`
			Requests   int       `json:"requests"`
			Unfinished bool      `json:"unfinished"`
		} `json:"report"`
	}](t, filepath.Join(out, "e2e.jsonl")) {
		seen[r.Phase]++
		if r.Report.Unfinished {
			t.Errorf("%s: %s unfinished", r.Phase, r.Name)
		}
		if r.Kind != "online" {
			continue
		}
		if rep := r.Report; rep.Rate <= 0 || rep.Requests == 0 || len(rep.LatMs) != rep.Requests || rep.ServiceMs <= 0 || !(rep.Busy > 0 && rep.Busy < 1) {
			t.Errorf("%s %s: rate %v, %d requests, %d latencies, service %v ms, busy %v: want an open loop's report", r.Phase, r.Name, rep.Rate, rep.Requests, len(rep.LatMs), rep.ServiceMs, rep.Busy)
		}
	}
	for _, p := range []string{"alone", "mps-prio", "mmk"} {
		if seen[p] != 6 {
			t.Errorf("phase %s: %d job lines, want 6", p, seen[p])
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`within p99=1\.5x \|`).Match(report) || !regexp.MustCompile(`- \S+: [0-9.]+ % under mmk, [0-9.]+ % by hand`).Match(report) {
		t.Errorf("the report does not judge the requests by the target:\n%s", report)
	}
	var slo bool
	for _, r := range jsonLines[struct {
		Phase string `json:"phase"`
		Kind  string `json:"kind"`
		Job   struct {
			Spec struct {
				SLO string `json:"slo"`
			} `json:"spec"`
		} `json:"job"`
	}](t, filepath.Join(out, "e2e.jsonl")) {
		if r.Phase == "mmk" && r.Kind == "online" {
			slo = true
			if r.Job.Spec.SLO != "p99=1.5x" {
				t.Errorf("an online job under mmk has target %q, want p99=1.5x", r.Job.Spec.SLO)
			}
		}
	}
	if !slo {
		t.Error("no online job under mmk")
	}
}
