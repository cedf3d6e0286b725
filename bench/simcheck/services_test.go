package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/sim/jobsim"
)

// sloRuns are the committed SLO benchmark runs with the services together.
var sloRuns = []string{
	"H200-141GB=../../docs/results/slo-h200-2026-11-26/round0",
	"H200-141GB=../../docs/results/slo-h200-2026-11-26/round1",
	"H100-80GB=../../docs/results/slo-h100-2026-11-26/round0",
	"H100-80GB=../../docs/results/slo-h100-2026-11-26/rounds",
}

// TestServicesOnTheCommittedData: every together window of the committed
// runs is a case of both services, with the benchmark's requests.
func TestServicesOnTheCommittedData(t *testing.T) {
	models, err := jobsim.BuiltinModels(1)
	if err != nil {
		t.Fatal(err)
	}
	var cases []svcCase
	for _, spec := range sloRuns {
		gpu, dir, _ := strings.Cut(spec, "=")
		r, err := readSLORun(gpu, dir)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := serviceCases(r, models)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	// 2 + 4 rounds of 4 phases, 2 services each.
	if len(cases) != 48 {
		t.Fatalf("%d cases, want 48", len(cases))
	}
	for _, c := range cases {
		// The simulator's quantiles are its histogram's buckets (1.2 %
		// wide): a ratio of 1 reads from 0.988.
		if c.n < 60 || !(c.load > 0 && c.load < 1) || c.meas[0] <= 0 || c.pred[0] < 0.98 || c.pred[1] < 0.98 {
			t.Errorf("case %+v: want requests, a load in (0, 1), measured ratios and predicted ones of about 1 or more", c)
		}
	}
	out := filepath.Join(t.TempDir(), "s.md")
	if err := runServices(sloRuns, out); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| H200-141GB | round0 | 0 | high | svc-b32 | 30 |", "| H100-80GB | rounds | 3 | low-again | svc-b1 | 20 |", "| svc-b32 | 24 |", "## Three batch-32 services together (JOBSET=sim), H200", "The measurement's own noise"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestSLOServicesMatch: the check's services are bench/gpu/slo.py's.
func TestSLOServicesMatch(t *testing.T) {
	src, err := os.ReadFile("../../bench/gpu/slo.py")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^SERVICES = \[(.*)\]$`).FindSubmatch(src)
	if line == nil {
		t.Fatal("bench/gpu/slo.py: no SERVICES line")
	}
	got := regexp.MustCompile(`\("([^"]+)", "resnet50", (\d+), \(([\d.]+), ([\d.]+), ([\d.]+)\)\)`).FindAllSubmatch(line[1], -1)
	if len(got) != len(sloServices) {
		t.Fatalf("slo.py SERVICES %s: %d resnet50 services, want %d", line[1], len(got), len(sloServices))
	}
	for i, m := range got {
		s := sloServices[i]
		batch := map[string]string{"svc-b1": "1", "svc-b32": "32"}[s.name]
		if string(m[1]) != s.name || string(m[2]) != batch {
			t.Errorf("slo.py service %d: %s at batch %s, want %s at %s", i, m[1], m[2], s.name, batch)
		}
		for k := range 3 {
			if r, _ := strconv.ParseFloat(string(m[3+k]), 64); r != s.rates[k] {
				t.Errorf("%s: rate %d is %v in slo.py, %v here", s.name, k, r, s.rates[k])
			}
		}
	}
}

// TestServicesRefusals: a spec without its GPU, an unknown GPU model, a
// directory without windows and records of another clock are refused,
// naming what is wrong.
func TestServicesRefusals(t *testing.T) {
	if err := runServices([]string{"../../docs/results/slo-h200-2026-11-26/round0"}, ""); err == nil || !strings.Contains(err.Error(), "want GPU=DIR") {
		t.Errorf("no GPU: %v", err)
	}
	if err := runServices([]string{"H200=" + t.TempDir()}, ""); err == nil || !strings.Contains(err.Error(), "windows.jsonl") {
		t.Errorf("no windows: %v", err)
	}
	// One together window whose records lie on another clock.
	dir := t.TempDir()
	w := `{"round": 0, "segment": "mps", "setting": "%s", "phase": "low", "m0": 10, "m1": 20, "services": {%s}}` + "\n"
	lines := fmt.Sprintf(w, "alone svc-b1", `"svc-b1": {"n": 1}`) + fmt.Sprintf(w, "alone svc-b32", `"svc-b32": {"n": 1}`) + fmt.Sprintf(w, "together", `"svc-b1": {"n": 1}, "svc-b32": {"n": 1}`)
	if err := os.WriteFile(filepath.Join(dir, "windows.jsonl"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "records-r0-mps.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	rec := map[string]any{"svc-b1": map[string]any{"role": "svc", "requests": [][3]float64{{15, 15, 15.005}}}, "svc-b32": map[string]any{"role": "svc", "requests": [][3]float64{{115, 115, 115.006}}}}
	if err := json.NewEncoder(z).Encode(rec); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := runServices([]string{"H200-141GB=" + dir}, ""); err == nil || !strings.Contains(err.Error(), "0 of svc-b32's requests in the records, the window counted 1") {
		t.Errorf("records of another clock: %v", err)
	}
	if err := runServices([]string{"B200=" + dir}, ""); err == nil {
		t.Error("an unknown GPU model: no error")
	}
}
