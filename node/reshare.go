package node

import (
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/slo"
)

// maskSpan is a run of an instance's controller on mask rungs over every
// offline task: since when, and the largest share of the TPCs it kept
// (the least restraint that held its services meanwhile).
type maskSpan struct {
	since time.Time
	share float64
}

// minShare is the least CUDA_MPS_ACTIVE_THREAD_PERCENTAGE a reshare gives
// (partitioner's MPSConfig hands out 10..100).
const minShare = 10

// reshare turns a TPC mask that an instance's latency controller has held
// over every offline task for placement.reshare_after (as sampled at the
// placement loop's decisions, at most a quarter of it apart) into an MPS
// share, under MPS only (nothing else enforces a share):
// each running offline job there whose MPS share is larger than the
// mask's (the largest it kept meanwhile) and whose measured restart cost
// is at most placement.move_max_lost is restarted, capped at that share
// there, at least minShare (jobs.Job.ShareCap and ShareCapAt; its
// placement on that instance gives it no more). Claims (the kubelet's to
// restart) and jobs started within the span are left alone. A share set at the
// start restrains a trainer less than a mask of its size (beside a
// request loop on an H200, MPS 75 % kept vgg19 at 0.58 of its speed
// alone, 3/4 of the TPCs at 0.50; on an H100 one TPC masked costs it
// 10 %, six 19 %, docs/results/slo-h100-masks.md), but only a restart sets it. Once the
// controller has stayed on its first rung for as long, the caps there are
// lifted for the jobs' next starts (no restart for that). Each step is in
// the log and the jobs' events, each restart in the reconfiguration
// history. It returns when to look again (0: off, or nothing to watch).
func (n *Node) reshare() time.Duration {
	after := n.cfg.Move.ReshareAfter
	if after <= 0 || n.cfg.MPS == nil {
		return 0
	}
	views := n.controllerViewsNow()
	now := n.cfg.Now()
	next := time.Duration(0)
	if len(views) > 0 {
		next = max(time.Second, after/4)
	}
	// Instances gone, and jobs no longer running, are forgotten.
	maps.DeleteFunc(n.strain.masked, func(key string, _ maskSpan) bool { return !hasView(views, key) })
	maps.DeleteFunc(n.strain.calm, func(key string, _ time.Time) bool { return !hasView(views, key) })
	maps.DeleteFunc(n.strain.dearNoted, func(id string, _ bool) bool {
		j, ok := n.get(id)
		return !ok || j.State != jobs.Running
	})
	for key, sv := range views {
		share, masked := maskOf(sv)
		if !masked {
			delete(n.strain.masked, key)
		}
		calm := !sv.Active || sv.Level == 0 && !sv.Probing
		if !calm {
			delete(n.strain.calm, key)
		}
		switch {
		case masked:
			span, ok := n.strain.masked[key]
			if !ok {
				span = maskSpan{since: now}
			}
			span.share = max(span.share, share)
			n.strain.masked[key] = span
			if wait := n.reshareJobs(key, span, now); wait > 0 {
				next = min(next, wait)
			}
		case calm:
			since, ok := n.strain.calm[key]
			if !ok {
				n.strain.calm[key] = now
				continue
			}
			if wait := after - now.Sub(since); wait > 0 {
				next = min(next, wait)
				continue
			}
			n.liftCaps(key, now.Sub(since))
		}
	}
	return next
}

// hasView reports whether views has an instance key.
func hasView(views map[string]server.SLOView, key string) bool {
	_, ok := views[key]
	return ok
}

// maskOf is the share of the TPCs an instance's controller holds every
// offline task to, and whether it does (a rung with a mask over all of
// them, not only the first to connect, nor while probing).
func maskOf(sv server.SLOView) (float64, bool) {
	if !sv.Active || sv.Probing || sv.Level < 0 || sv.Level >= len(sv.Ladder) {
		return 0, false
	}
	r, err := slo.ParseRung(sv.Ladder[sv.Level])
	if err != nil || r.TPCs <= 0 || r.TPCTasks > 0 || r.Suspend {
		return 0, false
	}
	return r.TPCs, true
}

// reshareJobs restarts the running offline jobs of an instance with an
// MPS share above the span's that have run under the mask for
// reshare_after, capped at it, where the restart is cheap enough; a
// dearer one is said on the job's events once. It returns when the next
// job there will have run that long (0: none waits).
func (n *Node) reshareJobs(key string, span maskSpan, now time.Time) time.Duration {
	after, next := n.cfg.Move.ReshareAfter, time.Duration(0)
	// Floor: no larger than the mask's share.
	limit := max(minShare, int(math.Floor(100*span.share+1e-9)))
	for _, id := range n.inState(jobs.Running) {
		j, ok := n.get(id)
		// A claim's containers are the kubelet's to restart, not mmkd's.
		if !ok || j.Online() || j.IsClaim() || j.Placement == nil || j.Placement.InstanceKey != key || j.Placement.MPSPercent <= limit {
			continue
		}
		// Held under the mask for reshare_after: since the span began, or
		// since the job started if later.
		if wait := after - now.Sub(later(span.since, j.StartedAt)); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		cost, desc := n.restartCost(&j, now)
		if cost.Lost > n.cfg.Move.MaxLost.Seconds() {
			why := fmt.Sprintf("not restarted at an MPS share of %d %%: its restart would cost %.0fs, more than placement.move_max_lost %v (%s)",
				limit, cost.Lost, n.cfg.Move.MaxLost, desc)
			if !n.strain.dearNoted[id] {
				// Once in the log and on its events (the notes' budget is
				// shared with the controller's).
				n.strain.dearNoted[id] = true
				n.cfg.Log.Info("placement: reshare", "job", id, "verdict", why)
				n.note(id, why)
			}
			continue
		}
		if _, err := n.update(id, func(j *jobs.Job) { j.ShareCap, j.ShareCapAt = limit, key }); err != nil {
			n.cfg.Log.Error("placement: reshare", "job", id, "err", err)
			continue
		}
		why := fmt.Sprintf("restarted at an MPS share of at most %d %% (was %d %%): %s held its offline kernels to %.0f %% of the TPCs or less for %v; restart cost %s",
			limit, j.Placement.MPSPercent, j.Placement.InstanceName, 100*span.share, now.Sub(later(span.since, j.StartedAt)).Round(time.Second), desc)
		n.cfg.Log.Info("placement: reshare", "job", id, "why", why)
		n.restart(id, why)
		g := j.Placement.GPU
		n.record(jobs.Reconfig{Time: now, GPU: g, Cause: "reshare: " + why, Restarted: []string{id}}, now)
	}
	return next
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// liftCaps clears the share caps set on an instance whose controller has
// stayed on its first rung (or off) for calm, whatever the jobs' states:
// their next starts there get the share the placement plans.
func (n *Node) liftCaps(key string, calm time.Duration) {
	for _, id := range n.inState(jobs.Running, jobs.Pending, jobs.Placed, jobs.Restarting) {
		j, ok := n.get(id)
		if !ok || j.ShareCap == 0 || j.ShareCapAt != key {
			continue
		}
		if _, err := n.update(id, func(j *jobs.Job) { j.ShareCap, j.ShareCapAt = 0, "" }); err != nil {
			n.cfg.Log.Error("placement: reshare", "job", id, "err", err)
			continue
		}
		delete(n.strain.dearNoted, id)
		why := fmt.Sprintf("MPS share cap of %d %% on %s lifted for its next start there: its latency controller needed no restraint for %v", j.ShareCap, key, calm.Round(time.Second))
		n.cfg.Log.Info("placement: reshare", "job", id, "why", why)
		n.note(id, why)
	}
}
