package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/slo"
)

// TestSimSLO runs the scenario suite on a few scenarios of the built-in
// calibration: the table names both splits and the static settings, the
// folder gets the table, the plot and a line per scenario; --scenario
// prints one scenario's runs; --summary the calibration.
func TestSimSLO(t *testing.T) {
	dir := t.TempDir()
	out, err := mmkctl(t, "sim", "slo", "-n", "3", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| tune | mmk | 3 |", "| held-out | mmk | 3 |", "prio+50%", "tpcs=0.25"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for name, want := range map[string]string{"suite.md": "| split |", "suite.svg": "<svg", "scenarios.jsonl": `"policy":"mmk"`} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, lacks %q", name, err, want)
		}
		if name == "scenarios.jsonl" && strings.Count(string(b), "\n") != 6 {
			t.Errorf("scenarios.jsonl has %d lines, want 6", strings.Count(string(b), "\n"))
		}
	}
	// The request-scoped masks are calibrated settings, compared as
	// static ones; --statics names those compared.
	out, err = mmkctl(t, "sim", "slo", "-n", "2", "--split", "tune", "--statics", "priority,tpcs=0.5/req")
	if err != nil || !strings.Contains(out, "tpcs=0.5/req") || strings.Contains(out, "prio+50%") {
		t.Errorf("--statics: %v\n%s", err, out)
	}
	out, err = mmkctl(t, "sim", "slo", "--split", "held-out", "--scenario", "1")
	if err != nil || !strings.Contains(out, `"id":1`) || !strings.Contains(out, `"split":"held-out"`) {
		t.Errorf("--scenario 1: %v\n%s", err, out)
	}
	out, err = mmkctl(t, "sim", "slo", "--summary")
	if err != nil || !strings.Contains(out, "Mix vgg19:32,resnet152:32,bert:8") {
		t.Errorf("--summary: %v\n%s", err, out)
	}
}

// TestSimSLOErrors: bad flags are refused naming the flag and value.
func TestSimSLOErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--split", "train"}, `flag --split: "train"`},
		{[]string{"-n", "0"}, "flag -n: 0"},
		{[]string{"--held-out-mix", "vgg16:8"}, `flag --held-out-mix: "vgg16:8"`},
		{[]string{"--ladder", "priority,fast"}, "flag --ladder"},
		{[]string{"--ladder", "priority,guard=1ms"}, "flag --ladder: rung guard=1ms was not calibrated"},
		{[]string{"--calibration", "/nonexistent/calib.jsonl"}, "flag --calibration"},
		{[]string{"--statics", "priority,prio+30%"}, `flag --statics: "prio+30%" was not calibrated`},
	} {
		_, err := mmkctl(t, append([]string{"sim", "slo"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestSetControllerKey: each setting --set and --also take, and bad ones
// refused naming the key and the value.
func TestSetControllerKey(t *testing.T) {
	for _, tc := range []struct {
		kv, want string
	}{
		{"risk=0.1", ""}, {"tolerance=3", ""}, {"aim=0.5", ""}, {"prior-penalty=1", ""}, {"alpha=1e-12", ""},
		{"calm=5s", ""}, {"replay=-1s", ""}, {"judge=30s", ""}, {"short=1s", ""},
		{"risk", `"risk": want KEY=VALUE`}, {"risk=x", "risk=x: not a number"}, {"calm=5", "calm=5: want a duration"},
		{"speed=2", `"speed": unknown setting`}, {"risk=2", "risk=2: slo controller: "},
	} {
		c := slo.DefaultConfig()
		err := setControllerKey(&c, tc.kv)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.kv, err, tc.want)
		}
	}
}
