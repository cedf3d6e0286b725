package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// TestRunOnTheCommittedData: the report of the committed e2e rounds and
// campaign holds every phase's row and both checks.
func TestRunOnTheCommittedData(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.md")
	if err := run("../../docs/results/mmkd-e2e-h100-2026-11-25/e2e.jsonl", "../../data/profiles/h100-2026-11-25.csv", "", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| baseline | r50-serve |", "| mps-prio | densenet201-train |", "| mmk | bert-train |", "## The ground truth against the H100 campaign", "online job, 1 co-runner(s), offline jobs at priority 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestReadLinesErrors: a dry run's lines and broken JSON are refused with
// the line named.
func TestReadLinesErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"round": 0, "phase": "alone", "report": {"dry": true}}`, ":1: a dry run"},
		{"\n{\"round\": ", ":2: "},
	} {
		p := filepath.Join(t.TempDir(), "e2e.jsonl")
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readLines(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
	if err := run(filepath.Join(t.TempDir(), "none.jsonl"), "", "", ""); err == nil {
		t.Error("a missing file: no error")
	}
}

// simLine is one e2e line of a JOBSET=sim run.
func simLine(phase, name, kind, job string, t0 float64, set func(l *line)) line {
	l := line{Round: 0, Phase: phase, Name: name, Kind: kind, T0: t0}
	l.Report.Job = job
	set(&l)
	return l
}

// TestReplay: a service and a trainer, alone and under mps-prio, become
// the simulator's jobs (the service's load from its rate and alone time
// per request, the trainer's work from its alone speed) and a row of
// measured against simulated; a case without the open loop's fields is
// refused.
func TestReplay(t *testing.T) {
	lines := []line{
		simLine("alone", "svc", "online", "resnet50_infer", 0, func(l *line) {
			l.Report.Rate, l.Report.ServiceMs, l.Report.TStart, l.Report.TEnd = 20, 10, 1, 11
		}),
		simLine("alone", "tr", "offline", "resnet50_train", 20, func(l *line) {
			l.Report.Iters, l.Report.ItPerS, l.Report.TStart, l.Report.TEnd = 300, 30, 25, 35
		}),
		simLine("mps-prio", "svc", "online", "resnet50_infer", 100, func(l *line) {
			l.Report.Rate, l.Report.ServiceMs, l.Report.TStart, l.Report.TEnd = 20, 12, 105, 125
			l.Report.LatMs = []float64{10, 20, 30, 40} // target 35 ms: 3 of 4 in time
		}),
		simLine("mps-prio", "tr", "offline", "resnet50_train", 100, func(l *line) {
			l.Report.Iters, l.Report.ItPerS, l.Report.TStart, l.Report.TEnd = 300, 20, 110, 125
		}),
	}
	alone := aloneRunsOf(lines)
	jobs, err := replayCase(lines[2:], alone)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || math.Abs(jobs[0].Load-0.2) > 1e-9 || jobs[0].Work != 20*time.Second || jobs[1].Work != 10*time.Second || !jobs[0].Online || jobs[1].Online {
		t.Errorf("jobs %+v: want the service at load 0.2 for 20 s and the trainer with 10 s of work", jobs)
	}
	m := measured(lines[2:], alone, 3.5)
	if m.slo != 0.75 || m.batchJCT != 25 || m.run != 15 || m.makespan != 25 {
		t.Errorf("measured %+v: want SLO 0.75, JCT 25 s, 15 s on the GPU, makespan 25 s", m)
	}
	models, err := jobsim.BuiltinModels(1)
	if err != nil {
		t.Fatal(err)
	}
	h100, err := partitioner.LookupModel("H100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := replay(&b, "x.jsonl", lines, models, h100); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 0 | mps-prio | mps-prio | 75.00 % / ") {
		t.Errorf("report lacks the mps-prio row:\n%s", b.String())
	}
	closed := lines[2]
	closed.Report.Rate = 0
	if _, err := replayCase([]line{closed}, alone); err == nil || !strings.Contains(err.Error(), "JOBSET=sim") {
		t.Errorf("a closed-loop service: error %v, want it refused", err)
	}
}

// TestAloneMedians: the replay's alone references are each job's median
// over the rounds, in every round, so that one noisy alone phase does
// not move that round's replay alone.
func TestAloneMedians(t *testing.T) {
	var lines []line
	for round, v := range []float64{30, 45, 20} {
		tr := simLine("alone", "tr", "offline", "resnet50_train", 0, func(l *line) { l.Report.ItPerS = v })
		svc := simLine("alone", "svc", "online", "resnet50_infer", 0, func(l *line) { l.Report.ServiceMs = v / 10 })
		tr.Round, svc.Round = round, round
		lines = append(lines, tr, svc, simLine("mps-prio", "tr", "offline", "resnet50_train", 0, func(l *line) { l.Round = round }))
	}
	m := aloneRunsOf(lines).medians()
	for round := range 3 {
		if got := m[round]["tr"].Report.ItPerS; got != 30 {
			t.Errorf("round %d: trainer alone %v it/s, want the median 30", round, got)
		}
		if got := m[round]["svc"].Report.ServiceMs; got != 3 {
			t.Errorf("round %d: service alone %v ms, want the median 3", round, got)
		}
	}
	if len(m) != 3 || len(m[0]) != 2 {
		t.Errorf("medians %v: want 3 rounds of 2 jobs", m)
	}
}
