package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/slo"
)

// MoveConfig moves offline jobs off GPUs whose services their instance's
// latency controller cannot hold without its dearest restraint
// (placement.move_after, placement.move_max_lost).
type MoveConfig struct {
	// After is how long an instance must stay strained (its controller on
	// its top rung, or a service not held there) before an offline job
	// beside its services is moved to another GPU that has room for it
	// (partitioner.Relieve); 0: never.
	After time.Duration
	// MaxLost is the most a move may cost the moved job: its measured
	// restart cost (stop, start-up until it works on the GPU again, and
	// the work since its last checkpoint; restartCost). It bounds a
	// reshare's restart too.
	MaxLost time.Duration
	// ReshareAfter is how long an instance's controller must hold its
	// offline kernels to a share of the TPCs (a mask rung over every
	// offline task) before each offline job there is restarted with an
	// MPS share no larger (placement.reshare_after; reshare.go); 0: never.
	ReshareAfter time.Duration
}

// strainState is what the node keeps of strained instances and moved
// jobs: since when each instance key has been strained, the GPU (NVML
// index) each moved job must not be placed back on while it waits, and
// when each job was last moved (moved: it is not moved again for
// avoidFor times move_after, so that two strained GPUs do not hand a job
// back and forth).
type strainState struct {
	since map[string]time.Time
	avoid map[string]int
	at    map[string]time.Time
	moved map[string]time.Time
	// masked: per instance key, since when its controller has held a
	// mask over every offline task, and the largest share of the TPCs it
	// kept meanwhile; calm: since when it has been on rung 0 (reshare.go).
	masked map[string]maskSpan
	calm   map[string]time.Time
	// dearNoted: jobs whose events already say a reshare was too dear.
	dearNoted map[string]bool
}

// avoidFor is how long a moved job that still waits avoids its old GPU:
// past it, it may go back there rather than wait on for a GPU that
// filled up while it stopped.
const avoidFor = 4

// strained reports whether an instance's controller holds its services
// only at its dearest restraint, or not at all: on its top rung, or with
// a service not held whose misses are the offline jobs' doing (a futile
// climb, where restraining them did not help, is not).
func strained(sv server.SLOView) bool {
	if !sv.Active || len(sv.Ladder) < 2 {
		return false
	}
	if sv.Level == len(sv.Ladder)-1 {
		return true
	}
	return slices.ContainsFunc(sv.Services, func(s server.ServiceView) bool { return s.State == slo.NotHeld && !s.Futile })
}

// relieve moves offline jobs off GPUs whose services have been strained
// for MoveConfig.After, where partitioner.Relieve finds another GPU that
// takes them and their restart costs at most MaxLost. It returns when to
// look again (0: no instance has a controller to watch).
func (n *Node) relieve(gpus []gpuInfo) time.Duration {
	if n.cfg.Move.After <= 0 {
		return 0
	}
	now := n.cfg.Now()
	var missing []string
	next := time.Duration(0)
	seen := map[string]bool{}
	views := n.controllerViewsNow()
	if len(views) > 0 {
		// Strain begins between decisions: look again within a quarter
		// of After.
		next = max(time.Second, n.cfg.Move.After/4)
	}
	for key, sv := range views {
		if !strained(sv) {
			continue
		}
		seen[key] = true
		since, ok := n.strain.since[key]
		if !ok {
			since = now
			n.strain.since[key] = now
		}
		if wait := n.cfg.Move.After - now.Sub(since); wait > 0 {
			next = min(next, wait)
			continue
		}
		for _, s := range sv.Services {
			if s.Job != "" {
				missing = append(missing, s.Job)
			}
		}
	}
	for key := range n.strain.since {
		if !seen[key] {
			delete(n.strain.since, key)
		}
	}
	n.pruneAvoid()
	if len(missing) == 0 {
		return next
	}
	req, placedOn := n.request(gpus)
	costs, dear := map[string]string{}, map[string]string{}
	moves, err := partitioner.Relieve(req, n.est, n.placementOptions(gpus), missing, n.movable(now, costs, dear))
	if err != nil {
		n.cfg.Log.Error("placement: relieve", "err", err)
		return retryAfter
	}
	for _, mv := range moves {
		n.moveJob(gpus, placedOn, mv, costs[mv.Job], now)
	}
	if len(moves) == 0 {
		for id, why := range dear {
			n.cfg.Log.Info("placement: move", "job", id, "verdict", why)
			n.note(id, why)
		}
	}
	// The strained instances wait another After before the next move.
	for _, id := range missing {
		if j, ok := n.get(id); ok && j.Placement != nil {
			n.strain.since[j.Placement.InstanceKey] = now
		}
	}
	return n.cfg.Move.After
}

// controllerViewsNow is every instance's latency controller as it stands
// (the test's, where it gives them).
func (n *Node) controllerViewsNow() map[string]server.SLOView {
	if n.cfg.controllerViews != nil {
		return n.cfg.controllerViews()
	}
	return n.sloViews(false)
}

// movable is the jobs a move may take: running, not moved within
// avoidFor times move_after, and with a measured restart cost of at most
// MaxLost, said in costs (those dearer are said in dear, with their
// cost).
func (n *Node) movable(now time.Time, costs, dear map[string]string) func(string) bool {
	return func(id string) bool {
		j, ok := n.get(id)
		if !ok || j.State != jobs.Running {
			return false
		}
		n.mu.Lock()
		at, moved := n.strain.moved[id]
		n.mu.Unlock()
		if moved && now.Sub(at) < avoidFor*n.cfg.Move.After {
			return false
		}
		cost, desc := n.restartCost(&j, now)
		if cost.Lost > n.cfg.Move.MaxLost.Seconds() {
			from := -1
			if j.Placement != nil {
				from = j.Placement.GPU
			}
			dear[id] = fmt.Sprintf("not moved off GPU %d to relieve its services: its restart would cost %.0fs, more than placement.move_max_lost %v (%s)",
				from, cost.Lost, n.cfg.Move.MaxLost, desc)
			return false
		}
		costs[id] = desc
		return true
	}
}

// moveJob carries out one move of a job movable let through (cost: its
// restart cost in words): the job is restarted (SIGTERM, its checkpoint)
// and placed again off its GPU; the move goes to the log, the jobs'
// events and the reconfiguration history.
func (n *Node) moveJob(gpus []gpuInfo, placedOn []int, mv partitioner.Move, cost string, now time.Time) {
	j, ok := n.get(mv.Job)
	if !ok || j.State != jobs.Running {
		return
	}
	from := gpus[placedOn[mv.From]].state.Index
	to := gpus[placedOn[mv.To]].state.Index
	n.mu.Lock()
	n.strain.avoid[mv.Job], n.strain.at[mv.Job], n.strain.moved[mv.Job] = from, now, now
	n.mu.Unlock()
	why := fmt.Sprintf("moved off GPU %d to GPU %d: %s; restart cost %s", from, to, mv.Why, cost)
	n.cfg.Log.Info("placement: move", "job", mv.Job, "service", mv.Service, "from", from, "to", to, "why", why)
	n.restart(mv.Job, why)
	n.note(mv.Service, fmt.Sprintf("offline job %s moved off its GPU to relieve it: %s", mv.Job, mv.Why))
	g := gpus[placedOn[mv.From]]
	n.record(jobs.Reconfig{Time: now, GPU: from, Cause: "move: " + mv.Why, From: layoutText(g), To: layoutText(g), Restarted: []string{mv.Job}}, now)
}

// pruneAvoid forgets the GPUs moved jobs avoid once they run again or
// ended, or after avoidFor times move_after of waiting, and the moves
// older than that.
func (n *Node) pruneAvoid() {
	now := n.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, at := range n.strain.moved {
		if now.Sub(at) >= avoidFor*n.cfg.Move.After {
			delete(n.strain.moved, id)
		}
	}
	for id := range n.strain.avoid {
		if j, ok := n.jobs[id]; !ok || (j.State != jobs.Pending && j.State != jobs.Restarting) || now.Sub(n.strain.at[id]) > avoidFor*n.cfg.Move.After {
			delete(n.strain.avoid, id)
			delete(n.strain.at, id)
		}
	}
}
