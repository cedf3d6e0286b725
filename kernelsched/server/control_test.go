package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line    string
		want    Command
		wantErr string
	}{
		{"stats", Command{Op: "stats"}, ""},
		{"policy fikit", Command{Op: "policy", Policy: "fikit"}, ""},
		{"  policy   guard  tau=100us slack=0.1 inflight=1ms floor=0.5 probe-every=64 ", Command{Op: "policy", Policy: "guard"}, ""},
		{"policy guard tau=-1ns", Command{Op: "policy", Policy: "guard"}, ""},
		{"", Command{}, "empty command"},
		{"stats now", Command{}, `stats takes no argument, got "now"`},
		{"loud 1", Command{Op: "loud", Loud: true}, ""},
		{"loud 0", Command{Op: "loud"}, ""},
		{"loud", Command{}, `loud takes 0 or 1, got ""`},
		{"loud yes", Command{}, `loud takes 0 or 1, got "yes"`},
		{"loud 1 0", Command{}, `loud takes 0 or 1, got "1 0"`},
		{"go", Command{}, `unknown command "go"`},
		{"policy", Command{}, "missing the policy name"},
		{"policy nope", Command{}, `policy "nope" is not one of`},
		{"policy guard tau", Command{}, `"tau" is not key=value`},
		{"policy guard tau=soon", Command{}, "tau=soon"},
		{"policy guard floor=2", Command{}, "floor=2: must be in (0, 1]"},
		{"policy guard slack=0", Command{}, "slack=0: must be in (0, 10]"},
		{"policy guard inflight=0s", Command{}, "inflight=0s: must be positive"},
		{"policy guard probe-every=1", Command{}, "probe-every=1: must be at least 2"},
		{"policy guard colour=red", Command{}, `unknown key "colour"`},
		{"slo on", Command{Op: "slo", SLO: "on"}, ""},
		{"slo off", Command{Op: "slo", SLO: "off"}, ""},
		{"slo status", Command{Op: "slo", SLO: "status"}, ""},
		{"slo target svc p99=20ms", Command{Op: "slo", SLO: "target", Task: "svc"}, ""},
		{"slo target svc p99=20", Command{}, `slo target svc: latency target "p99=20": the bound "20" has no unit`},
		{"slo aim 0.5", Command{Op: "slo", SLO: "aim"}, ""},
		{"slo aim 0", Command{}, "slo aim 0: must be in (0, 1]"},
		{"slo aim 1.5", Command{}, "slo aim 1.5: must be in (0, 1]"},
		{"slo aim half", Command{}, `slo aim half`},
		{"slo", Command{}, "slo takes on, off, status, target NAME TARGET or aim F"},
		{"slo target svc", Command{}, "slo takes on, off"},
		{"tpcs 0.5", Command{Op: "tpcs", TPCs: 0.5}, ""},
		{"tpcs 0.5 req", Command{Op: "tpcs", TPCs: 0.5, PerRequest: true}, ""},
		{"tpcs 0.5 always", Command{}, `tpcs takes the share`},
		{"tpcs 0.5 req req", Command{}, `tpcs takes the share`},
	}
	for _, tc := range tests {
		got, err := ParseCommand(tc.line)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if got.Op != tc.want.Op || got.Policy != tc.want.Policy || got.Loud != tc.want.Loud || got.SLO != tc.want.SLO || got.Task != tc.want.Task ||
			got.TPCs != tc.want.TPCs || got.PerRequest != tc.want.PerRequest {
			t.Errorf("%q: %+v, want op %q policy %q", tc.line, got, tc.want.Op, tc.want.Policy)
		}
	}
	c, err := ParseCommand("policy guard tau=100us slack=0.1 inflight=1ms floor=0.5 probe-every=64")
	if err != nil {
		t.Fatal(err)
	}
	g := c.Config.Guard
	if g.Tau != 100*time.Microsecond || g.Slack != 0.1 || g.Inflight != time.Millisecond || g.Floor != 0.5 || g.ProbeEvery != 64 {
		t.Errorf("guard parameters %+v", g)
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"stats", "policy guard tau=1ms slack=0.05", "policy fikit", "policy guard floor=NaN", "policy guard probe-every=99999999999999999999",
		"slo target a p99.9=2x", "slo on", "slo aim 0.5", "slo aim NaN", "tpcs 0.5 req"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		if c.Op != "stats" && c.Op != "policy" && c.Op != "loud" && c.Op != "slo" && c.Op != "tpcs" {
			t.Fatalf("%q parsed to op %q", line, c.Op)
		}
		if c.Op == "tpcs" && !(c.TPCs > 0 && c.TPCs <= 1) {
			t.Fatalf("%q parsed to a share of the TPCs %v, out of (0, 1]", line, c.TPCs)
		}
		if c.SLO == "aim" && !(c.Aim > 0 && c.Aim <= 1) {
			t.Fatalf("%q parsed to aim %v, out of (0, 1]", line, c.Aim)
		}
		g := c.Config.Guard
		if g.Floor < 0 || g.Floor > 1 || g.Slack < 0 || g.Inflight < 0 || (g.ProbeEvery != 0 && g.ProbeEvery < 2) {
			t.Fatalf("%q parsed to out-of-range guard parameters %+v", line, g)
		}
	})
}

// TestControl: a live server switches policy on a control line and
// reports its counters and the policy's state; a bad line changes nothing.
func TestControl(t *testing.T) {
	s, _ := startServer(t, "fikit")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r Reply
	for _, step := range []struct {
		line, policy string
		ok           bool
	}{
		{"policy guard tau=50us", "guard", true},
		{"policy nope", "guard", false},
		{"stats", "guard", true},
		{"policy fifo", "fifo", true},
		{"loud 1", "fifo", true},
		{"loud on", "fifo", false},
	} {
		r = Reply{}
		if err := json.Unmarshal(s.Do(ctx, step.line), &r); err != nil {
			t.Fatal(err)
		}
		if r.OK != step.ok || r.Policy != step.policy {
			t.Errorf("%q: ok %v policy %q (error %q), want %v %q", step.line, r.OK, r.Policy, r.Error, step.ok, step.policy)
		}
		if step.line == "stats" && r.Counters == nil {
			t.Errorf("stats: no counters")
		}
	}
}

// TestControlAim: slo aim sets the controller's aim on a server that has
// one, refuses a value out of range without changing it, and fails on a
// server without a controller.
func TestControlAim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := sloServer(t, []string{"priority", "tpcs=0.5"}, nil, nil, nil)
	for _, step := range []struct {
		line string
		ok   bool
		aim  float64
	}{
		{"slo aim 0.5", true, 0.5},
		{"slo aim 2", false, 0.5},
		{"slo aim 1", true, 1},
	} {
		var r Reply
		if err := json.Unmarshal(s.Do(ctx, step.line), &r); err != nil {
			t.Fatal(err)
		}
		s.slo.mu.Lock()
		aim := s.slo.ctrl.Config().Aim
		s.slo.mu.Unlock()
		if step.ok && (r.SLO == nil || r.SLO.Aim != step.aim) {
			t.Errorf("%q: the reply's view %+v, want aim %v", step.line, r.SLO, step.aim)
		}
		if r.OK != step.ok || aim != step.aim {
			t.Errorf("%q: ok %v (error %q), aim %v; want ok %v, aim %v", step.line, r.OK, r.Error, aim, step.ok, step.aim)
		}
	}
	plain, _ := startServer(t, "fifo")
	var r Reply
	if err := json.Unmarshal(plain.Do(ctx, "slo aim 0.5"), &r); err != nil {
		t.Fatal(err)
	}
	if r.OK || !strings.Contains(r.Error, "no latency controller") {
		t.Errorf("slo aim on a server without a controller: ok %v, error %q", r.OK, r.Error)
	}
}
