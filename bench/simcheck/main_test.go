package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunOnTheCommittedData: the report of the committed e2e rounds and
// campaign holds every phase's row and both checks.
func TestRunOnTheCommittedData(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.md")
	if err := run("../../docs/results/mmkd-e2e-h100-2026-11-25/e2e.jsonl", "../../data/profiles/h100-2026-11-25.csv", out); err != nil {
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
	if err := run(filepath.Join(t.TempDir(), "none.jsonl"), "", ""); err == nil {
		t.Error("a missing file: no error")
	}
}
