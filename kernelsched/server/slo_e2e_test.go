package server

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// writeRequests writes a service's trace: iters requests of kernels
// launches each (durUs long, gapUs apart), each ended by a
// synchronisation and followed by thinkUs.
func writeRequests(t *testing.T, iters, kernels, durUs, gapUs, thinkUs int) string {
	t.Helper()
	var b strings.Builder
	for range iters {
		for k := range kernels {
			fmt.Fprintf(&b, "r%d 4 1 1 128 1 1 %d %d\n", k, durUs, gapUs)
		}
		fmt.Fprintf(&b, "sync %d\n", thinkUs)
	}
	p := filepath.Join(t.TempDir(), "requests.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSynced writes a trainer's trace: n kernels of durUs, each followed
// by a synchronisation (its queue on the fake GPU never runs ahead).
func writeSynced(t *testing.T, n, kinds, durUs int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d 4 1 1 128 1 1 %d 0\nsync 0\n", i%kinds, durUs)
	}
	p := filepath.Join(t.TempDir(), "synced.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sloServer serves fifo with a latency controller on ladder.
func sloServer(t *testing.T, ladder []string, targets map[string]slo.Target, suspend func([]int, bool, SuspendCause) error, extra func(*Config)) *Server {
	t.Helper()
	l, err := slo.ParseLadder(ladder)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Policy: "fifo", SLO: &SLOConfig{Controller: slo.Config{Ladder: l, MinAlone: 1 << 20}, Targets: targets, Suspend: suspend}}
	if extra != nil {
		extra(&cfg)
	}
	s, _ := startServerWith(t, cfg)
	return s
}

// service finds the controller's view of the task named name.
func service(s *Server, name string) (ServiceView, bool) {
	for _, sv := range s.SLO(false).Services {
		if sv.Name == name {
			return sv, true
		}
	}
	return ServiceView{}, false
}

// TestRequestsMeasuredEndToEnd: protocol steps 9 and 10 with the real
// hook and the fake CUPTI. A quiet online task (fifo) marks each request's
// first launch, so the server measures requests it sees no launch of; a
// service that reports its own is judged by those; with marks off a quiet
// task's requests go unmeasured.
func TestRequestsMeasuredEndToEnd(t *testing.T) {
	a := buildC(t)
	cases := []struct {
		name     string
		env      []string
		noMarks  bool
		reported bool
		measured bool
	}{
		{name: "quiet, marked by the hook", measured: true},
		{name: "reported by the service", env: []string{"MMK_FAKE_REPORT=1"}, reported: true, measured: true},
		{name: "quiet, no marks", noMarks: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sloServer(t, []string{"priority"}, nil, nil, func(cfg *Config) { cfg.NoRequestMarks = c.noMarks })
			// 200 requests of 5 kernels of 200 µs, 2 ms apart.
			tr := writeRequests(t, 200, 5, 200, 20, 2000)
			env := append([]string{"MMK_SCHED_SOCKET=" + s.cfg.Socket, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=svc"}, c.env...)
			var res replayResult
			done := make(chan struct{})
			go func() {
				defer close(done)
				res = runReplay(t, replay(context.Background(), a, tr, 1, env...))
			}()
			var sv ServiceView
			waitFor(t, func() bool {
				var ok bool
				sv, ok = service(s, "svc")
				return ok
			})
			<-done
			waitFor(t, func() bool { return s.Counters().Tasks == 0 })
			// The controller drops a gone task: read its last view from
			// the counters and the history it kept is gone with it, so
			// the checks use a live view taken while it ran.
			t.Logf("replay: %d iterations, p50 %.0f µs, p99 %.0f µs, reported %d; server requests %d; last view %+v",
				res.Iters, res.IterP50Us, res.IterP99Us, res.Reported, s.Counters().Requests, sv)
			n := s.Counters().Requests
			switch {
			case !c.measured && n > 20:
				t.Errorf("a quiet task without marks had %d requests measured", n)
			case c.measured && (n < uint64(res.Iters)*9/10 || n > uint64(res.Iters)*2+2):
				t.Errorf("%d requests measured of %d iterations", n, res.Iters)
			}
			if c.reported && res.Reported != res.Iters {
				t.Errorf("reported %d of %d iterations", res.Reported, res.Iters)
			}
		})
	}
}

// TestHookLatencyMatchesTheService: the hook's measure of a request and
// the service's own agree on the fake GPU (the same span: first launch to
// the synchronisation's return).
func TestHookLatencyMatchesTheService(t *testing.T) {
	a := buildC(t)
	for _, report := range []bool{false, true} {
		s := sloServer(t, []string{"priority"}, map[string]slo.Target{"svc": slo.MustParse("p99=1s")}, nil, nil)
		tr := writeRequests(t, 400, 5, 200, 20, 1000)
		env := []string{"MMK_SCHED_SOCKET=" + s.cfg.Socket, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=svc"}
		if report {
			env = append(env, "MMK_FAKE_REPORT=1")
		}
		cmd := replay(context.Background(), a, tr, 1, env...)
		var res replayResult
		done := make(chan struct{})
		go func() {
			defer close(done)
			res = runReplay(t, cmd)
		}()
		var last ServiceView
		for {
			select {
			case <-done:
			case <-time.After(50 * time.Millisecond):
				if sv, ok := service(s, "svc"); ok && sv.Total > 0 {
					last = sv
				}
				continue
			}
			break
		}
		p50 := float64(last.Recent.P50) / 1e3
		t.Logf("report %v: service p50 %.0f µs, server p50 %.0f µs over %d (total %d)", report, res.IterP50Us, p50, last.Recent.N, last.Total)
		if last.Total < 100 || math.Abs(p50-res.IterP50Us) > 0.1*res.IterP50Us+100 {
			t.Errorf("report %v: the server's p50 %.0f µs over %d requests, the service's %.0f µs", report, p50, last.Total, res.IterP50Us)
		}
	}
}

// recorder is a Suspend that stops and continues the processes, as
// mmkctl kernelsched serve does, and records its calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) suspend(pids []int, stop bool, _ SuspendCause) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%v %v", stop, pids))
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil {
			return err
		}
	}
	return nil
}

// listDecisions is decisions one per line, for a failure's message.
func listDecisions(ds []SLODecision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  %v %d->%d %s", d.Wall.Format("15:04:05.000"), d.From, d.To, d.Reason)
	}
	return b.String()
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestSLOControllerEndToEnd: a service with a target it cannot meet,
// sharing the fake GPU with an offline task, makes the server's
// controller try the rungs no forecast holds it on (each known only by
// the priors until measured), each decision with its reason in numbers,
// and the server applies them: the offline task stopped, and TPC masks
// on it (its hook masks, MMK_TPC_MASK=1, and the fake GPU runs its
// kernels on half the TPCs, slower). Turned off, the controller lifts
// its restraint.
func TestSLOControllerEndToEnd(t *testing.T) {
	a := buildC(t)
	rec := &recorder{}
	var decisions []SLODecision
	var mu sync.Mutex
	s := sloServer(t, []string{"priority", "hold", "tpcs=0.5", "suspend"}, map[string]slo.Target{"svc": slo.MustParse("p99=100us")}, rec.suspend,
		func(c *Config) {
			c.SLO.Controller.Settle = 50 * time.Millisecond
			c.SLO.Controller.Tick = 100 * time.Millisecond
			c.SLO.Controller.Calm = time.Second
			c.SLO.OnDecision = func(d SLODecision) {
				mu.Lock()
				decisions = append(decisions, d)
				mu.Unlock()
			}
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One fake GPU for both (its timeline shared): the offline kernels
	// slow the online requests, and suspending them helps.
	gpu := "MMK_FAKE_GPU=" + filepath.Join(t.TempDir(), "gpu")
	lo := replay(ctx, a, writeSynced(t, 400, 3, 200), 0, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=5", "MMK_TASK_NAME=lo",
		"MMK_TPC_MASK=1", "MMK_CUDA_PATH="+a.cupti, gpu)
	lo.Args = append(lo.Args, "8") // loops without end, for at most 8 s
	var loRes replayResult
	loDone := make(chan struct{})
	go func() {
		defer close(loDone)
		loRes = runReplay(t, lo)
	}()
	waitFor(t, func() bool { return s.Counters().Tasks == 1 })
	hi := replay(ctx, a, writeRequests(t, 8000, 4, 100, 10, 500), 1, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=svc", gpu)
	hiDone := make(chan struct{})
	go func() {
		defer close(hiDone)
		runReplay(t, hi)
	}()
	deadline := time.Now().Add(60 * time.Second)
	masked := map[int]uint32{} // what each offline hook said once it masked
	var got []SLODecision
	var v SLOView
	// Until both rungs were taken and the hook said it masked: on a
	// loaded machine lo's first kernel on the mask rung comes some
	// time after the decision.
	sawMask := false
	for time.Now().Before(deadline) {
		v = s.SLO(true)
		for pid, st := range v.TPCStates {
			if st == TPCMasking || masked[pid] == 0 {
				masked[pid] = st
			}
			sawMask = sawMask || st == TPCMasking
		}
		mu.Lock()
		got = slices.Clone(decisions)
		mu.Unlock()
		if sawMask && slices.ContainsFunc(got, func(d SLODecision) bool { return d.To == 2 }) && slices.ContainsFunc(got, func(d SLODecision) bool { return d.To == 3 }) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) < 2 {
		t.Fatalf("%d decisions after a minute: %+v", len(got), got)
	}
	// Each decision with its reason, in numbers.
	for i, d := range got {
		if !strings.Contains(d.Reason, "requests/s") || !strings.Contains(d.Reason, "%") || len(d.Services) != 1 ||
			d.Services[0].Name != "svc" || len(d.Offline) != 1 || d.Offline[0].Name != "lo" || d.Err != "" {
			t.Errorf("decision %d: %+v", i, d)
		}
	}
	if d := got[0]; d.From != 0 || d.To != 3 || !strings.Contains(d.Reason, "tighten: ") {
		t.Errorf("first decision %+v: want priority to suspend, the highest rung not measured", d)
	}
	loPID := got[0].Offline[0].PID
	if st := masked[loPID]; st != TPCMasking {
		t.Errorf("tpc state of lo %d (%v), want %d (masking); decisions:%s", st, masked, TPCMasking, listDecisions(got))
	}
	if calls := rec.seen(); len(calls) == 0 || calls[0] != fmt.Sprintf("true [%d]", loPID) {
		t.Errorf("suspend calls %v", calls)
	}
	if h := v.History[v.Services[0].PID]; len(h) == 0 {
		t.Error("no history of the service")
	}
	<-hiDone
	// Lifting: the controller turned off resumes lo and puts fifo back.
	if err := s.SetSLOActive(ctx, false); err != nil {
		t.Fatal(err)
	}
	if calls := rec.seen(); calls[len(calls)-1] != fmt.Sprintf("false [%d]", loPID) || s.Policy() != "fifo" {
		t.Errorf("after off: calls %v, policy %s", calls, s.Policy())
	}
	<-loDone
	if loRes.TPCMasked == 0 || loRes.TPCLastKeep != 30 {
		t.Errorf("lo ran %d kernels masked, the last on %d TPCs; want some, on 30 of 66 (slots 0-32, three of them holes)", loRes.TPCMasked, loRes.TPCLastKeep)
	}
	if loRes.TPCPast > 0 {
		t.Errorf("lo ran %d kernels with a mask bit past the GPU's 72 TPC slots, want none", loRes.TPCPast)
	}
}

// TestSLOFailedSuspensionMeasuresNoneAlone: on a rung that suspends the
// offline task, the service's requests measure it alone (absolute
// target) only if the suspension stopped the task: where stopping it
// fails, the task runs beside them and none is taken for the service
// alone. Before, a failed suspension's requests were.
func TestSLOFailedSuspensionMeasuresNoneAlone(t *testing.T) {
	a := buildC(t)
	for _, tc := range []struct {
		name    string
		suspend func([]int, bool, SuspendCause) error
	}{
		{"stopped", (&recorder{}).suspend},
		{"stop fails", func([]int, bool, SuspendCause) error { return syscall.EPERM }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sloServer(t, []string{"suspend"}, map[string]slo.Target{"svc": slo.MustParse("p99=25ms")}, tc.suspend, func(c *Config) {
				c.SLO.Controller.Settle = 50 * time.Millisecond
				c.SLO.Controller.Tick = 50 * time.Millisecond
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lo := replay(ctx, a, writeSynced(t, 400, 3, 200), 0, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=5", "MMK_TASK_NAME=lo")
			lo.Args = append(lo.Args, "4")
			loDone := make(chan struct{})
			go func() {
				defer close(loDone)
				runReplay(t, lo)
			}()
			defer func() {
				// Resumed by the controller turned off, so that lo ends.
				_ = s.SetSLOActive(ctx, false)
				<-loDone
			}()
			waitFor(t, func() bool { return s.Counters().Tasks == 1 })
			hi := replay(ctx, a, writeRequests(t, 300, 4, 100, 10, 2000), 1, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=0", "MMK_ONLINE=1",
				"MMK_TASK_NAME=svc", "MMK_FAKE_REPORT=1")
			hiDone := make(chan struct{})
			go func() {
				defer close(hiDone)
				runReplay(t, hi)
			}()
			var sv ServiceView
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if v, ok := service(s, "svc"); ok {
					sv = v
					if sv.Total >= 200 {
						break
					}
				}
			}
			<-hiDone
			t.Logf("%d requests, %d alone; suspended %v", sv.Total, sv.AloneN, s.SLO(false).Suspended)
			switch {
			case sv.Total < 200:
				t.Fatalf("%d requests seen, want 200 or more", sv.Total)
			case tc.name == "stopped" && sv.AloneN == 0:
				t.Error("no request measured the service alone while the offline task was stopped")
			case tc.name == "stop fails" && sv.AloneN != 0:
				t.Errorf("%d requests measured the service alone while the offline task ran beside them", sv.AloneN)
			}
		})
	}
}

// TestSuspensionBoundedEndToEnd (issue 54, item 1): a service that is
// always late keeps the controller on its suspending rung, and still the
// offline task is stopped at most the bound's Max at a time, then runs
// (resumed while the rung stays, listed unstopped in the view), and is
// stopped again after its rest. Before, it stayed stopped as long as the
// service was late.
func TestSuspensionBoundedEndToEnd(t *testing.T) {
	a := buildC(t)
	rec := &recorder{}
	s := sloServer(t, []string{"priority", "suspend"}, map[string]slo.Target{"svc": slo.MustParse("p99=100us")}, rec.suspend,
		func(c *Config) {
			c.SLO.Controller.Settle = 50 * time.Millisecond
			c.SLO.Controller.Tick = 100 * time.Millisecond
			c.SLO.StopBound = slo.StopBound{Max: 300 * time.Millisecond, Share: 0.5, Window: 3 * time.Second}
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gpu := "MMK_FAKE_GPU=" + filepath.Join(t.TempDir(), "gpu")
	lo := replay(ctx, a, writeSynced(t, 400, 3, 200), 0, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=5", "MMK_TASK_NAME=lo", gpu)
	lo.Args = append(lo.Args, "6")
	loDone := make(chan struct{})
	go func() {
		defer close(loDone)
		runReplay(t, lo)
	}()
	waitFor(t, func() bool { return s.Counters().Tasks == 1 })
	hi := replay(ctx, a, writeRequests(t, 1000, 4, 100, 10, 500), 0, "MMK_SCHED_SOCKET="+s.cfg.Socket, "MMK_PRIORITY=0", "MMK_ONLINE=1", "MMK_TASK_NAME=svc", gpu)
	hi.Args = append(hi.Args, "6")
	hiDone := make(chan struct{})
	go func() {
		defer close(hiDone)
		runReplay(t, hi)
	}()
	// Until lo was stopped, let run on the suspending rung, and stopped
	// again.
	deadline := time.Now().Add(30 * time.Second)
	var loPID int
	sawUnstopped := false
	stops := 0
	for time.Now().Before(deadline) && (!sawUnstopped || stops < 2) {
		v := s.SLO(false)
		if len(v.Offline) == 1 {
			loPID = v.Offline[0].PID
		}
		if v.Rung == "suspend" && slices.Contains(v.Unstopped, loPID) && loPID != 0 {
			sawUnstopped = true
		}
		stops = 0
		for _, c := range rec.seen() {
			if c == fmt.Sprintf("true [%d]", loPID) {
				stops++
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !sawUnstopped || stops < 2 {
		t.Fatalf("lo %d: seen unstopped on the suspending rung %v, stopped %d times; calls %v; decisions:%s", loPID, sawUnstopped, stops, rec.seen(), listDecisions(s.SLO(false).Decisions))
	}
	// Both end by their time limit (lo is resumed within the bound if
	// stopped then).
	<-hiDone
	<-loDone
}
