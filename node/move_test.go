package node

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/slo"
)

// TestMoveRelievesAService (issue 36): on two fake GPUs, a trainer and a
// service share GPU 1 (a filler holds GPU 0's memory, then ends). When
// GPU 1's latency controller has held the service only on its top rung
// (suspending the trainer) for placement.move_after, the trainer is moved:
// restarted, and placed on GPU 0, never back on GPU 1; the move is in the
// reconfiguration history with its reason and on both jobs' events. A
// controller off its top rung, a futile climb (restraint did not help),
// moves off, or a restart dearer than placement.move_max_lost move nothing.
// The controllers' views are given by the test (controllerViews): their
// dynamics are tested in slo and in TestSLOControllerOnTheNode.
func TestMoveRelievesAService(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   time.Duration
		maxLost time.Duration
		level   int
		detail  string
		state   slo.State
		futile  bool
		moved   bool
	}{
		{"held only on the top rung", 300 * time.Millisecond, time.Hour, 1, "p99 1ms against 2ms", slo.Met, false, true},
		{"not held below the top", 300 * time.Millisecond, time.Hour, 0, "p99 3ms against 2ms at the top rung", slo.NotHeld, false, true},
		{"held on a lower rung", 300 * time.Millisecond, time.Hour, 0, "p99 1ms against 2ms", slo.Met, false, false},
		{"futile", 300 * time.Millisecond, time.Hour, 0, "restraining the offline jobs does not help it", slo.NotHeld, true, false},
		{"moves off", 0, time.Hour, 1, "p99 1ms against 2ms", slo.Met, false, false},
		{"restart too dear", 300 * time.Millisecond, time.Millisecond, 1, "p99 1ms against 2ms", slo.Met, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var svcID string
			views := func() map[string]server.SLOView {
				mu.Lock()
				defer mu.Unlock()
				if svcID == "" {
					return nil
				}
				sv := server.ServiceView{TaskRef: server.TaskRef{Job: svcID}, ServiceStatus: slo.ServiceStatus{State: tc.state, Detail: tc.detail, Futile: tc.futile}}
				return map[string]server.SLOView{"gpu1": {Active: true, Ladder: []string{"priority", "suspend"}, Level: tc.level, Services: []server.ServiceView{sv}}}
			}
			m := fakeMPS(t)
			two := []fakegpu.GPUSpec{{Model: "H200-141GB"}, {Model: "H200-141GB"}}
			h := newHarnessWith(t, two, false, curveEstimator{}, nil, func(c *Config) {
				c.MPS, c.PriorityShares, c.Spread = m, true, true
				c.Move = MoveConfig{After: tc.after, MaxLost: tc.maxLost}
				c.controllerViews = views
			})
			script, gate := gated(t, "0")
			filler := sh("filler", script, "")
			filler.MemoryMiB = 130 << 10
			fill := h.submit(filler)
			if j := h.state(fill.ID, jobs.Running); j.Placement == nil || j.Placement.GPU != 0 {
				t.Fatalf("filler placed %+v, want GPU 0", j.Placement)
			}
			train := sh("train", "trap 'exit 0' TERM; sleep 60 & wait", "")
			train.MemoryMiB = 20 << 10
			off := h.state(h.submit(train).ID, jobs.Running)
			serve := sh("svc", "trap 'exit 0' TERM; sleep 60 & wait", "")
			serve.Kind, serve.MemoryMiB = jobs.Online, 20<<10
			on := h.state(h.submit(serve).ID, jobs.Running)
			if off.Placement.GPU != 1 || on.Placement.GPU != 1 {
				t.Fatalf("trainer on GPU %d, service on GPU %d; want both on GPU 1", off.Placement.GPU, on.Placement.GPU)
			}
			// The controller strains while GPU 0 is still full: no move;
			// once the filler ends, GPU 0 has room.
			mu.Lock()
			svcID = on.ID
			mu.Unlock()
			time.Sleep(2 * tc.after)
			if j, _ := h.n.Job(off.ID); j.Restarts != 0 {
				t.Fatalf("the trainer moved while no GPU had room: %+v", j)
			}
			open(t, gate)
			h.state(fill.ID, jobs.Succeeded)
			wait := 10 * time.Second
			if !tc.moved {
				wait = 3 * time.Second
			}
			j := restartedOnce(h, off.ID, wait)
			if !tc.moved {
				if j.Restarts != 0 || j.Placement == nil || j.Placement.GPU != 1 {
					t.Errorf("the trainer moved: restarts %d, placement %+v", j.Restarts, j.Placement)
				}
				if tc.maxLost < time.Second && !hasEvent(t, h, off.ID, "not moved off GPU 1") {
					t.Errorf("the trainer's events do not say why it was not moved")
				}
				return
			}
			if j.State != jobs.Running || j.Restarts != 1 || j.Placement == nil || j.Placement.GPU != 0 {
				t.Fatalf("the trainer after the move: %s, restarts %d, placement %+v; want running on GPU 0", j.State, j.Restarts, j.Placement)
			}
			if !hasReconfig(t, h, func(r jobs.Reconfig) bool {
				return r.GPU == 1 && slices.Contains(r.Restarted, off.ID) && strings.Contains(r.Cause, "move: "+on.ID+" misses its target")
			}) {
				t.Error("no move in the reconfigurations")
			}
			if !hasEvent(t, h, off.ID, "moved off GPU 1 to GPU 0") || !hasEvent(t, h, on.ID, "moved off its GPU to relieve it") {
				t.Errorf("the jobs' events do not tell the move")
			}
		})
	}
}

// restartedOnce waits up to wait for job id to run again after one
// restart, and returns it as it then stands.
func restartedOnce(h *harness, id string, wait time.Duration) jobs.Job {
	var j jobs.Job
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if j, _ = h.n.Job(id); j.Restarts == 1 && j.State == jobs.Running {
			break
		}
	}
	return j
}

// hasReconfig reports whether some reconfiguration in the history meets
// ok, logging the history where none does.
func hasReconfig(t *testing.T, h *harness, ok func(jobs.Reconfig) bool) bool {
	t.Helper()
	rs, err := h.n.Reconfigs(0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(rs, ok) {
		return true
	}
	t.Logf("reconfigurations: %+v", rs)
	return false
}

// hasEvent reports whether job id has an event whose reason holds s.
func hasEvent(t *testing.T, h *harness, id, s string) bool {
	t.Helper()
	if eventSaid(t, h, id, s) {
		return true
	}
	evs, _ := h.n.Events(id)
	t.Logf("events of %s: %+v", id, evs)
	return false
}

// eventSaid reports whether one of the job's events says s, quietly.
func eventSaid(t *testing.T, h *harness, id, s string) bool {
	t.Helper()
	evs, err := h.n.Events(id)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs, func(e jobs.Event) bool { return strings.Contains(e.Reason, s) })
}

// TestMovableJobs: a move takes only running jobs, not one moved within
// avoidFor times move_after (two strained GPUs would hand it back and
// forth), and not one whose restart costs more than move_max_lost, which
// is said with its cost.
func TestMovableJobs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxLost time.Duration
		movedAt time.Duration // before now; 0: never moved
		want    bool
		dear    bool
	}{
		{"running", time.Hour, 0, true, false},
		{"moved lately", time.Hour, time.Second, false, false},
		{"moved long ago", time.Hour, 5 * time.Second, true, false},
		{"restart too dear", time.Millisecond, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
				c.Move = MoveConfig{After: time.Second, MaxLost: tc.maxLost}
			})
			j := h.state(h.submit(sh("train", "trap 'exit 0' TERM; sleep 60 & wait", "")).ID, jobs.Running)
			now := h.n.cfg.Now()
			if tc.movedAt > 0 {
				h.n.mu.Lock()
				h.n.strain.moved[j.ID] = now.Add(-tc.movedAt)
				h.n.mu.Unlock()
			}
			dear := map[string]string{}
			if got := h.n.movable(now, map[string]string{}, dear)(j.ID); got != tc.want {
				t.Errorf("movable %v, want %v", got, tc.want)
			}
			if why, ok := dear[j.ID]; ok != tc.dear || ok && !strings.Contains(why, "more than placement.move_max_lost") {
				t.Errorf("dear %q (%v), want %v", why, ok, tc.dear)
			}
			if h.n.movable(now, map[string]string{}, dear)("no-such-job") {
				t.Error("an unknown job is movable")
			}
		})
	}
}

// TestDecideTimeShown: the plan says how long Algorithm 1 took, over all
// decisions and in the last one (issue 39 reports it beside the
// simulator's figure).
func TestDecideTimeShown(t *testing.T) {
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil)
	h.state(h.submit(sh("train", "sleep 60", "")).ID, jobs.Running)
	// The view is published after the decision's starts.
	p := h.n.Plan()
	for end := time.Now().Add(5 * time.Second); p.Decisions == 0 && time.Now().Before(end); p = h.n.Plan() {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Decisions == 0 || p.DecideSeconds <= 0 || p.LastDecideSeconds <= 0 || p.LastDecideSeconds > p.DecideSeconds {
		t.Errorf("plan: %d decisions, %v s in all, %v s the last", p.Decisions, p.DecideSeconds, p.LastDecideSeconds)
	}
}
