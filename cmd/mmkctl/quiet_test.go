package main

import (
	"bytes"
	"strings"
	"testing"
)

// mmkctlStderr runs the command line in-process and returns stdout,
// stderr and the error.
func mmkctlStderr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestProgressOffTerminal: a simulation's progress, written to a stderr
// that is not a terminal (a log, a pipe), has no carriage returns: a
// plain line when the work is done (issue 37, item 7).
func TestProgressOffTerminal(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		final string
	}{
		{"sim kernels", []string{"sim", "kernels", "-o", "json", "--duration", "100ms", "--task", "hp:resnet50_infer_bs1:0:think=2ms", "--task", "lp:vgg19_train_bs32:5", "--policy", "fifo"},
			"simulated 3/3 ("},
		{"sim jobs", []string{"sim", "jobs", "--workload", "testbed", "--gpus", "2", "--policy", "default", "-o", "json"},
			"default: 60/60 jobs done ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := mmkctlStderr(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(stderr, "\r") {
				t.Errorf("stderr has carriage returns: %q", stderr)
			}
			if !strings.Contains(stderr, tt.final) || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr %q: want a final line with %q", stderr, tt.final)
			}
		})
	}
}

// TestServeRefusesABadAim: kernelsched serve refuses an aim out of (0, 1]
// by its flag and value, with or without the latency controller on,
// before it opens any socket.
func TestServeRefusesABadAim(t *testing.T) {
	for _, args := range [][]string{
		{"kernelsched", "serve", "--socket", "/nonexistent/s.sock", "--slo-aim", "0"},
		{"kernelsched", "serve", "--socket", "/nonexistent/s.sock", "--slo-aim", "1.5", "--slo", "svc=p99=20ms"},
		{"kernelsched", "serve", "--socket", "/nonexistent/s.sock", "--slo-aim", "NaN"},
	} {
		_, _, err := mmkctlStderr(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--slo-aim") {
			t.Errorf("%v: error %v, want one naming --slo-aim", args, err)
		}
	}
}
