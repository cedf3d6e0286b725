package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
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
		s, _ := lateServiceServer(t, cfg, &logs)
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

// lateServiceServer is a server with the controller of cfg, logging to
// logs: an online task "svc" (pid 101, returned) whose 200 requests of
// 5 ms, one every 20 ms, are all past its target of 1 ms, and an
// offline task "lo" (pid 102).
func lateServiceServer(t *testing.T, cfg *SLOConfig, logs *bytes.Buffer) (*Server, *task) {
	t.Helper()
	s, err := New(Config{Policy: "fifo", Socket: filepath.Join(t.TempDir(), "s.sock"), Log: slog.New(slog.NewTextHandler(logs, nil)), SLO: cfg})
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
	return s, svc
}

// TestServiceRejoins (issue 54, item 7): a service whose hook reconnects
// (same job, or same process) is the same service to the controller: its
// id, requests and verdicts stay and the rung is not re-armed; a task of
// another process is a new service. Before, every reconnection was a
// new service, and what every rung held was forgotten. (A service that
// went is out at once: the controller holds for none while it is away.)
func TestServiceRejoins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		again  *task
		sameID bool
	}{
		{"same process", &task{hello: Hello{Online: true, PID: 101, Name: "svc"}}, true},
		{"same job, another process", &task{hello: Hello{Online: true, PID: 201, Name: "svc"}, job: "j1"}, true},
		{"another process", &task{hello: Hello{Online: true, PID: 301, Name: "svc"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := slo.ParseLadder([]string{"priority", "suspend"})
			if err != nil {
				t.Fatal(err)
			}
			cfg := &SLOConfig{Controller: slo.Config{Ladder: l, Settle: 10 * time.Millisecond},
				Targets: map[string]slo.Target{"svc": slo.MustParse("p99=1ms")},
				Suspend: func([]int, bool, SuspendCause) error { return nil }}
			s, err := New(Config{Policy: "fifo", Socket: filepath.Join(t.TempDir(), "s.sock"), Log: slog.New(slog.DiscardHandler), SLO: cfg})
			if err != nil {
				t.Fatal(err)
			}
			svc := &task{hello: Hello{Online: true, PID: 101, Name: "svc"}}
			if tc.again.job != "" {
				svc.job = tc.again.job
			}
			s.sloTaskAdded(svc)
			s.sloTaskAdded(&task{hello: Hello{PID: 102, Name: "lo"}})
			for i := range 200 {
				at := time.Duration(i) * 20 * time.Millisecond
				s.request(svc, slo.Sample{At: at + 5*time.Millisecond, Latency: 5 * time.Millisecond, Source: slo.Hook})
			}
			now := 5 * time.Second
			for ; now < 8*time.Second; now += 500 * time.Millisecond {
				s.sloStep(context.Background(), now)
			}
			before := s.SLO(false)
			if before.Level == 0 || len(before.Services) != 1 {
				t.Fatalf("before: level %d, services %+v", before.Level, before.Services)
			}
			s.sloTaskRemoved(svc)
			s.sloStep(context.Background(), now)
			s.sloTaskAdded(tc.again)
			// Without the service the controller rests on rung 0 (none to
			// hold for); with it back, as it was, it takes its rung again.
			for at := now + 100*time.Millisecond; at < now+time.Second; at += 100 * time.Millisecond {
				s.sloStep(context.Background(), at)
			}
			after := s.SLO(false)
			if len(after.Services) != 1 {
				t.Fatalf("after: services %+v", after.Services)
			}
			got, was := after.Services[0], before.Services[0]
			if same := got.ID == was.ID; same != tc.sameID {
				t.Fatalf("service %s after %s; want the same id %v", got.ID, was.ID, tc.sameID)
			}
			if tc.sameID && (got.Total != was.Total || after.Level != before.Level) {
				t.Errorf("rejoined: requests %d (were %d), level %d (was %d)", got.Total, was.Total, after.Level, before.Level)
			}
			if !tc.sameID && got.Total != 0 {
				t.Errorf("a new service with %d requests", got.Total)
			}
		})
	}
}

// TestOtherUsersShielded (issue 54, item 1): a service's target masks or
// suspends only its own user's offline tasks unless an admin let it
// reach others (Identity.RestrainOthers); the others are listed shielded
// and no request beside them is taken as alone (the suspension is not
// whole). Before, a target stopped every offline job on the instance,
// whoever owned it.
func TestOtherUsersShielded(t *testing.T) {
	for _, others := range []bool{false, true} {
		l, err := slo.ParseLadder([]string{"priority", "suspend"})
		if err != nil {
			t.Fatal(err)
		}
		var stopped []int
		cfg := &SLOConfig{Controller: slo.Config{Ladder: l, Settle: 10 * time.Millisecond},
			Targets: map[string]slo.Target{"svc": slo.MustParse("p99=1ms")},
			Suspend: func(pids []int, stop bool, _ SuspendCause) error {
				if stop {
					stopped = append(stopped, pids...)
				}
				return nil
			}}
		s, err := New(Config{Policy: "fifo", Socket: filepath.Join(t.TempDir(), "s.sock"), Log: slog.New(slog.DiscardHandler), SLO: cfg})
		if err != nil {
			t.Fatal(err)
		}
		svc := &task{hello: Hello{Online: true, PID: 101, Name: "svc"}, user: 1000, others: others}
		s.sloTaskAdded(svc)
		s.sloTaskAdded(&task{hello: Hello{PID: 102, Name: "mine"}, user: 1000})
		s.sloTaskAdded(&task{hello: Hello{PID: 103, Name: "theirs"}, user: 2000})
		for i := range 200 {
			at := time.Duration(i) * 20 * time.Millisecond
			s.request(svc, slo.Sample{At: at + 5*time.Millisecond, Latency: 5 * time.Millisecond, Source: slo.Hook})
		}
		for now := 5 * time.Second; now < 8*time.Second; now += 500 * time.Millisecond {
			s.sloStep(context.Background(), now)
		}
		v := s.SLO(false)
		slices.Sort(stopped)
		want, shielded := []int{102}, []int{103}
		if others {
			want, shielded = []int{102, 103}, nil
		}
		if v.Rung != "suspend" || !slices.Equal(stopped, want) || !slices.Equal(v.Shielded, shielded) {
			t.Errorf("others %v: rung %s, stopped %v (want %v), shielded %v (want %v)", others, v.Rung, stopped, want, v.Shielded, shielded)
		}
	}
}

// TestSLOApplyFailureLoggedOnce: a rung that cannot be applied (a
// suspension refused for good, as of the jobs in the server's own
// process group) is logged when it first fails, when its error changes,
// and again at most every applyErrEvery: before, the same warning came
// at every step, 8 times a second, for as long as the rung stood.
func TestSLOApplyFailureLoggedOnce(t *testing.T) {
	l, err := slo.ParseLadder([]string{"priority", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	refusal := "process 102: not stopped (in the server's own process group)"
	cfg := &SLOConfig{Controller: slo.Config{Ladder: l, Settle: 10 * time.Millisecond},
		Targets: map[string]slo.Target{"svc": slo.MustParse("p99=1ms")},
		Suspend: func(pids []int, stop bool, _ SuspendCause) error {
			if stop {
				return errors.New(refusal)
			}
			return nil
		}}
	s, svc := lateServiceServer(t, cfg, &logs)
	steps := 0
	for now := 5 * time.Second; now < 5*time.Second+applyErrEvery+10*time.Second; now += 125 * time.Millisecond {
		// The service goes on being late (5 ms against 1 ms), so that
		// the controller judges the rungs on requests, not on none.
		for k := range 3 {
			s.request(svc, slo.Sample{At: now - time.Duration(k)*40*time.Millisecond, Latency: 5 * time.Millisecond, Source: slo.Hook})
		}
		s.sloStep(context.Background(), now)
		steps++
	}
	if !slices.ContainsFunc(s.SLO(false).Decisions, func(d SLODecision) bool { return d.Rung.Suspend }) {
		t.Fatal("the controller never suspended")
	}
	warned := strings.Count(logs.String(), `msg="slo: applying the rung"`)
	if !strings.Contains(logs.String(), refusal) || warned < 1 || warned > 2 {
		t.Errorf("%d steps logged the refusal %d times, want once and once more %v later:\n%s", steps, warned, applyErrEvery, logs.String())
	}
}
