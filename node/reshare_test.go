package node

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

// TestReshareTurnsAMaskIntoAShare: a trainer alone on a fake H200 under
// MPS, its instance's latency controller (views given by the test) on a
// rung that masks every offline task to 3/4 of the TPCs. Held for
// placement.reshare_after, the trainer is restarted with an MPS share of
// at most 75 % (its placement and so its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
// say so), with the reason in its events and the reconfiguration
// history; once the controller has stayed on priority as long, the cap is
// lifted for its next start, without a restart. A mask over the first
// task only, a restart dearer than placement.move_max_lost, or reshares
// off change nothing.
func TestReshareTurnsAMaskIntoAShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    time.Duration
		maxLost  time.Duration
		rung     string
		reshared bool
		dear     bool
	}{
		{"a mask over every offline task", 300 * time.Millisecond, time.Hour, "tpcs=0.75", true, false},
		{"a mask over the first task only", 300 * time.Millisecond, time.Hour, "tpcs=0.75@1", false, false},
		{"restart too dear", 300 * time.Millisecond, time.Millisecond, "tpcs=0.75", false, true},
		{"reshares off", 0, time.Hour, "tpcs=0.75", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The one fake GPU is one instance, gpu0.
			var mu sync.Mutex
			level := 1
			views := func() map[string]server.SLOView {
				mu.Lock()
				defer mu.Unlock()
				return map[string]server.SLOView{"gpu0": {Active: true, Ladder: []string{"priority", tc.rung, "suspend"}, Level: level}}
			}
			m := fakeMPS(t)
			h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
				c.MPS, c.PriorityShares = m, true
				c.Move = MoveConfig{MaxLost: tc.maxLost, ReshareAfter: tc.after}
				c.controllerViews = views
			})
			off := h.state(h.submit(sh("train", "trap 'exit 0' TERM; sleep 60 & wait", "")).ID, jobs.Running)
			if off.Placement == nil || off.Placement.InstanceKey != "gpu0" || off.Placement.MPSPercent <= 75 {
				t.Fatalf("trainer placed %+v, want on gpu0 at an MPS share above 75 %%", off.Placement)
			}
			wait := 10 * time.Second
			if !tc.reshared {
				wait = 2 * time.Second
			}
			j := restartedOnce(h, off.ID, wait)
			if !tc.reshared {
				if j.Restarts != 0 || j.ShareCap != 0 || j.Placement == nil || j.Placement.MPSPercent != off.Placement.MPSPercent {
					t.Errorf("the trainer was reshared: restarts %d, cap %d, placement %+v", j.Restarts, j.ShareCap, j.Placement)
				}
				if tc.dear && !hasEvent(t, h, off.ID, "not restarted at an MPS share of 75 %") {
					t.Error("the trainer's events do not say why it was not reshared")
				}
				return
			}
			if j.State != jobs.Running || j.Restarts != 1 || j.ShareCap != 75 || j.ShareCapAt != "gpu0" || j.Placement == nil || j.Placement.MPSPercent != 75 {
				t.Fatalf("the trainer after the reshare: %s, restarts %d, cap %d, placement %+v; want running at 75 %%", j.State, j.Restarts, j.ShareCap, j.Placement)
			}
			if !hasEvent(t, h, off.ID, "restarted at an MPS share of at most 75 %") {
				t.Error("the trainer's events do not tell the reshare")
			}
			if !hasReconfig(t, h, func(r jobs.Reconfig) bool {
				return slices.Contains(r.Restarted, off.ID) && strings.HasPrefix(r.Cause, "reshare: ")
			}) {
				t.Error("no reshare in the reconfigurations")
			}
			// The controller needs no restraint for reshare_after: the cap
			// goes, the trainer runs on (its share changes at its next start).
			mu.Lock()
			level = 0
			mu.Unlock()
			// The cap is cleared before its note is written: wait for both.
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if j, _ = h.n.Job(off.ID); j.ShareCap == 0 && eventSaid(t, h, off.ID, "MPS share cap of 75 % on gpu0 lifted") {
					break
				}
			}
			if j.ShareCap != 0 || j.Restarts != 1 || j.State != jobs.Running || !hasEvent(t, h, off.ID, "MPS share cap of 75 % on gpu0 lifted") {
				t.Errorf("after calm: cap %d, restarts %d, %s", j.ShareCap, j.Restarts, j.State)
			}
		})
	}
}

// TestReshareWaitsForANewcomer: a job that started after its instance's
// mask span began is reshared only once it has run reshare_after under
// the mask itself (a job just placed or moved there is not restarted at
// once); reshareJobs says how long it waits.
func TestReshareWaitsForANewcomer(t *testing.T) {
	m := fakeMPS(t)
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
		c.MPS, c.PriorityShares = m, true
		c.Move = MoveConfig{MaxLost: time.Hour, ReshareAfter: time.Hour}
	})
	j := h.state(h.submit(sh("train", "trap 'exit 0' TERM; sleep 60 & wait", "")).ID, jobs.Running)
	now := h.n.cfg.Now()
	wait := h.n.reshareJobs(j.Placement.InstanceKey, maskSpan{since: now.Add(-2 * time.Hour), share: 0.75}, now)
	if wait <= 0 || wait > time.Hour {
		t.Errorf("the newcomer waits %v, want up to an hour", wait)
	}
	if got, _ := h.n.Job(j.ID); got.Restarts != 0 || got.ShareCap != 0 {
		t.Errorf("the newcomer was reshared: restarts %d, cap %d", got.Restarts, got.ShareCap)
	}
}
