package node

import (
	"fmt"
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
// over every offline task for placement.reshare_after into an MPS share:
// each running offline job there whose MPS share is larger than the
// mask's (the largest it kept meanwhile) and whose measured restart cost
// is at most placement.move_max_lost is restarted, capped at that share
// (jobs.Job.ShareCap; its placement gives it no more). A share set at the
// start restrains a trainer less than a mask of its size (beside a
// request loop on an H200, MPS 75 % kept vgg19 at 0.58 of its speed
// alone, 3/4 of the TPCs at 0.50; any mask costs it 18-20 % on an H100,
// docs/results/slo-h100-tpcs.md), but only a restart sets it. Once the
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
	for key := range n.strain.masked {
		if _, ok := views[key]; !ok {
			delete(n.strain.masked, key)
		}
	}
	for key := range n.strain.calm {
		if _, ok := views[key]; !ok {
			delete(n.strain.calm, key)
		}
	}
	for key, sv := range views {
		share, masked := maskOf(sv)
		if !masked {
			delete(n.strain.masked, key)
		}
		if !sv.Active || sv.Level != 0 || sv.Probing {
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
			if wait := after - now.Sub(span.since); wait > 0 {
				next = min(next, wait)
				continue
			}
			n.reshareJobs(key, span, now)
			// The next reshare there waits another reshare_after.
			n.strain.masked[key] = maskSpan{since: now}
		case sv.Active && sv.Level == 0 && !sv.Probing:
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
// MPS share above the span's, capped at it, where the restart is cheap
// enough; a dearer one is said on the job's events.
func (n *Node) reshareJobs(key string, span maskSpan, now time.Time) {
	limit := max(minShare, int(math.Round(100*span.share)))
	for _, id := range n.inState(jobs.Running) {
		j, ok := n.get(id)
		// A claim's containers are the kubelet's to restart, not mmkd's.
		if !ok || j.Online() || j.IsClaim() || j.Placement == nil || j.Placement.InstanceKey != key || j.Placement.MPSPercent <= limit {
			continue
		}
		cost, desc := n.restartCost(&j, now)
		if cost.Lost > n.cfg.Move.MaxLost.Seconds() {
			why := fmt.Sprintf("not restarted at an MPS share of %d %%: its restart would cost %.0fs, more than placement.move_max_lost %v (%s)",
				limit, cost.Lost, n.cfg.Move.MaxLost, desc)
			n.cfg.Log.Info("placement: reshare", "job", id, "verdict", why)
			n.note(id, why)
			continue
		}
		if _, err := n.update(id, func(j *jobs.Job) { j.ShareCap = limit }); err != nil {
			n.cfg.Log.Error("placement: reshare", "job", id, "err", err)
			continue
		}
		why := fmt.Sprintf("restarted at an MPS share of at most %d %% (was %d %%): %s held its offline kernels to %.0f %% of the TPCs or less for %v; restart cost %s",
			limit, j.Placement.MPSPercent, j.Placement.InstanceName, 100*span.share, now.Sub(span.since).Round(time.Second), desc)
		n.cfg.Log.Info("placement: reshare", "job", id, "why", why)
		n.restart(id, why)
		g := j.Placement.GPU
		n.record(jobs.Reconfig{Time: now, GPU: g, Cause: "reshare: " + why, Restarted: []string{id}}, now)
	}
}

// liftCaps clears the share caps of an instance's jobs whose controller
// has stayed on its first rung for calm: their next starts get the share
// the placement plans.
func (n *Node) liftCaps(key string, calm time.Duration) {
	for _, id := range n.inState(jobs.Running, jobs.Pending, jobs.Placed) {
		j, ok := n.get(id)
		if !ok || j.ShareCap == 0 || j.Placement == nil || j.Placement.InstanceKey != key {
			continue
		}
		if _, err := n.update(id, func(j *jobs.Job) { j.ShareCap = 0 }); err != nil {
			n.cfg.Log.Error("placement: reshare", "job", id, "err", err)
			continue
		}
		why := fmt.Sprintf("MPS share cap of %d %% lifted for its next start: %s needed no restraint for %v", j.ShareCap, j.Placement.InstanceName, calm.Round(time.Second))
		n.cfg.Log.Info("placement: reshare", "job", id, "why", why)
		n.note(id, why)
	}
}
