package server

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// TestSLODecisionsLoggedOnce (issue 53): a decision is logged once, by
// the server where no one hears its decisions and by its owner (mmkd,
// OnDecision) where one does; its reason names the service by its task's
// name (mmkd's job name), not a bare task number.
func TestSLODecisionsLoggedOnce(t *testing.T) {
	for _, owned := range []bool{false, true} {
		l, err := slo.ParseLadder([]string{"priority", "suspend"})
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer // sloStep logs on this goroutine
		var heard []SLODecision
		cfg := &SLOConfig{Controller: slo.Config{Ladder: l, Settle: 10 * time.Millisecond},
			Targets: map[string]slo.Target{"svc": slo.MustParse("p99=1ms")},
			Suspend: func([]int, bool, SuspendCause) error { return nil }}
		if owned {
			cfg.OnDecision = func(d SLODecision) { heard = append(heard, d) }
		}
		s, err := New(Config{Policy: "fifo", Socket: filepath.Join(t.TempDir(), "s.sock"), Log: slog.New(slog.NewTextHandler(&logs, nil)), SLO: cfg})
		if err != nil {
			t.Fatal(err)
		}
		svc := &task{hello: Hello{Online: true, PID: 101, Name: "svc"}}
		s.sloTaskAdded(svc)
		s.sloTaskAdded(&task{hello: Hello{PID: 102, Name: "lo"}})
		for i := range 200 {
			at := time.Duration(i) * 20 * time.Millisecond
			s.request(svc, slo.Sample{At: at + 5*time.Millisecond, Latency: 5 * time.Millisecond, Source: slo.Hook})
		}
		for now := 5 * time.Second; now < 8*time.Second; now += 500 * time.Millisecond {
			s.sloStep(context.Background(), now)
		}
		n := strings.Count(logs.String(), `msg="slo: rung"`)
		decisions := len(s.SLO(false).Decisions)
		switch {
		case decisions == 0:
			t.Fatalf("owned %v: no decision", owned)
		case owned && (n != 0 || len(heard) != decisions):
			t.Errorf("owned: the server logged %d decisions, its owner heard %d of %d", n, len(heard), decisions)
		case !owned && n != decisions:
			t.Errorf("the server logged %d lines for %d decisions", n, decisions)
		}
		if r := s.SLO(false).Decisions[0].Reason; !strings.Contains(r, "svc#1 ") {
			t.Errorf("reason %q does not name the service svc#1", r)
		}
	}
}
