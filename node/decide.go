package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// retryAfter is when the loop decides again after a decision it could
// not carry out whole (a MIG change waiting for its instances to empty, a
// failure of the backend, a start postponed because the job's MPS daemon,
// scheduler or profile directory failed).
const retryAfter = 2 * time.Second

// decide runs Algorithm 1 on the current state and carries out the plan:
// restarts (SIGTERM; the job is placed again once it exits), MIG changes
// once their instances are idle (only with ManageMIG), and starts. It
// returns when to decide again even if nothing happens (0: no need).
func (n *Node) decide(ctx context.Context) time.Duration {
	cause := summarize(n.causes)
	n.causes = n.causes[:0]
	n.firstArrival = time.Time{}
	gpus, err := n.readGPUs()
	if err != nil {
		n.cfg.Log.Error("placement: read GPUs", "err", err)
		return retryAfter
	}
	n.maskNew(gpus)
	// Jobs whose stop request could not be sent, and cancels whose stop
	// failed, are asked again, every retryAfter until they are done.
	for id := range n.stopRetry {
		if j, ok := n.get(id); !ok || (j.State != jobs.Restarting && j.State != jobs.Cancelled) || j.ExitCode != nil {
			delete(n.stopRetry, id)
			continue
		}
		if err := n.cfg.Runner.Stop(id, n.cfg.StopGrace); err == nil {
			delete(n.stopRetry, id)
		}
	}
	retry := time.Duration(0)
	if n.retryCancels() || len(n.stopRetry) > 0 {
		retry = retryAfter
	}
	req, placedOn := n.request(gpus)
	if why := n.mapping(); why != "" && len(req.Pending) > 0 {
		// A job started now would get the ladder of a GPU without masks
		// (its environment says whether its hook masks): the jobs wait
		// for the map, which wakes the loop when it is taken.
		n.noteMapping(why)
		n.publishView(gpus)
		return retry
	}
	if len(req.Pending) == 0 && !n.anyRunning() {
		n.noteWaits(nil, nil, false, nil)
		n.publishView(gpus)
		return retry
	}
	opt := n.placementOptions(gpus)
	t0 := time.Now()
	costs := map[string]string{}
	plan, gate, err := partitioner.DecideGated(req, n.est, opt, n.gateCosts(n.cfg.Now(), costs))
	n.decideTook = time.Since(t0)
	n.decideTotal += n.decideTook
	n.decisions++
	if err != nil {
		n.cfg.Log.Error("placement: decide", "err", err, "cause", cause)
		n.publishView(gpus)
		return retryAfter
	}
	if gate != nil {
		// The log, the reconfiguration record and the restarted jobs'
		// reason say whether the restarts were worth their cost.
		verdict := "kept every running job"
		if gate.Restart {
			verdict = "restarts"
		}
		var parts []string
		for _, id := range gate.Restarts {
			if d, ok := costs[id]; ok {
				parts = append(parts, d)
			}
		}
		n.cfg.Log.Info("placement: restart gate", "verdict", verdict, "weighed", gate.String(), "jobs", strings.Join(parts, "; "), "cause", cause)
		if gate.Restart {
			cause += "; restart gate: " + gate.String()
		}
	}
	// The request's GPUs in the plan's order, as the plan saw them, for
	// the reasons of the jobs it leaves waiting.
	planned := make([]gpuInfo, len(placedOn))
	for p, i := range placedOn {
		planned[p] = gpus[i]
	}
	again := retry
	deferred := map[string]string{}
	for _, ch := range plan.Changes {
		g := placedOn[ch.GPU]
		if d := n.apply(ctx, gpus[g], plan.GPUs[ch.GPU], ch, cause, deferred); d > 0 {
			again = d
		}
	}
	n.noteWaits(plan, planned, !opt.FixedMIG, deferred)
	if again > 0 || len(plan.Changes) > 0 {
		// A MIG change re-reads the layout; starts changed states.
		if fresh, err := n.readGPUs(); err == nil {
			gpus = fresh
		}
	}
	n.publishView(gpus)
	// A job waiting on its own need is placed anew when its wait ends.
	if w := n.nextWaitOut(plan.Waiting); w > 0 && (again == 0 || w < again) {
		again = w
	}
	// Offline jobs beside services strained for long move to another GPU
	// with room (placement.move_after).
	if w := n.relieve(gpus); w > 0 && (again == 0 || w < again) {
		again = w
	}
	// A mask held long over an instance's offline jobs becomes an MPS
	// share at their restart (placement.reshare_after).
	if w := n.reshare(); w > 0 && (again == 0 || w < again) {
		again = w
	}
	return again
}

// summarize joins the causes of a decision, the first few.
func summarize(causes []string) string {
	if len(causes) == 0 {
		return "timer"
	}
	if len(causes) > 3 {
		return strings.Join(causes[:3], ", ") + fmt.Sprintf(" and %d more", len(causes)-3)
	}
	return strings.Join(causes, ", ")
}

// placementOptions are Algorithm 1's options for a decision on gpus:
// online jobs keep their shares, MIG changes only where mig.manage allows
// them, priority shares where MPS runs, placement.spread, and waiting
// jobs placed in arrival order (largest memory first, Algorithm 1's line
// 1, keeps a small job waiting behind every large one that arrives after
// it: sim/jobsim TestPlacementOrderCannotStarve).
func (n *Node) placementOptions(gpus []gpuInfo) partitioner.Options {
	return partitioner.Options{FixOnlinePercent: true, FixedMIG: !n.migManaged(gpus), PriorityShares: n.cfg.PriorityShares && n.cfg.MPS != nil, Spread: n.cfg.Spread, ArrivalOrder: true, SLOGuard: n.cfg.SLOGuard}
}

// migManaged reports whether the loop may change layouts: mig.manage is
// on and every GPU it places on runs MIG (Algorithm 1's layout search
// applies to all GPUs of a decision; a GPU without MIG must keep its one
// whole-GPU instance).
func (n *Node) migManaged(gpus []gpuInfo) bool {
	if !n.cfg.ManageMIG || n.migBroken {
		return false
	}
	for _, g := range gpus {
		if g.skip == "" && !g.mig {
			return false
		}
	}
	return true
}

func (n *Node) anyRunning() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.ContainsFunc(n.order, func(j *jobs.Job) bool {
		return j.State == jobs.Placed || j.State == jobs.Running || j.State == jobs.Restarting || stopping(j)
	})
}

// stopping reports a cancelled job whose process has not ended yet (its
// stop's grace period, or a stop that failed and is tried again): it
// holds its place until it ends, pinned where it runs.
func stopping(j *jobs.Job) bool {
	return j.State == jobs.Cancelled && j.PID != 0 && j.ExitCode == nil
}

// request builds Algorithm 1's input from the GPUs and the jobs: what
// runs where, and the pending jobs in arrival order. placedOn maps the
// request's GPU positions to gpus' (GPUs mmk cannot place on are left
// out).
func (n *Node) request(gpus []gpuInfo) (partitioner.Request, []int) {
	var req partitioner.Request
	var placedOn []int
	pos := map[int]int{} // GPU index -> request position
	// The measured standing of online jobs, taken before the node's lock
	// (SLO takes the node's lock under its own).
	measured := n.sloMeasured()
	// The largest instance a job can get: a need is capped at what the
	// job runs at there alone, or a tight target could fit nowhere.
	top := n.largestInstance(gpus)
	for i, g := range gpus {
		if g.skip != "" {
			continue
		}
		pos[g.state.Index] = len(req.GPUs)
		placedOn = append(placedOn, i)
		req.GPUs = append(req.GPUs, partitioner.GPUPlan{Layout: g.layout})
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, j := range n.order {
		id := j.ID
		switch j.State {
		case jobs.Pending:
			pj := n.partJob(j, measured, top)
			if n.waitedOut(j, pj) {
				pj.MinSpeed = 0
			}
			if g, ok := n.strain.avoid[id]; ok {
				// Moved off that GPU (move.go): placed elsewhere.
				if p, ok := pos[g]; ok {
					pj.Avoid = []int{p}
				}
			}
			if j.IsClaim() {
				// A claim waits for the instance it was allocated.
				if pj.Pin = claimPin(j, gpus, placedOn); pj.Pin == nil {
					continue
				}
			}
			req.Pending = append(req.Pending, pj)
		case jobs.Placed, jobs.Running, jobs.Restarting, jobs.Cancelled:
			// A restarting job still holds its place until it exits, and
			// so does a cancelled one.
			pl := j.Placement
			if pl == nil || (j.State == jobs.Cancelled && !stopping(j)) {
				continue
			}
			p, ok := pos[pl.GPU]
			if !ok {
				continue
			}
			g := gpus[placedOn[p]]
			inst := slices.Index(g.keys, pl.InstanceKey)
			if inst < 0 {
				n.cfg.Log.Warn("placement: job's instance is gone", "job", id, "instance", pl.InstanceKey)
				continue
			}
			pj := n.partJob(j, measured, top)
			if j.IsClaim() || j.State == jobs.Cancelled {
				pj.Pin = &partitioner.Pin{GPU: p, Instance: inst}
			}
			req.GPUs[p].Jobs = append(req.GPUs[p].Jobs, partitioner.Placed{Job: pj, Instance: inst, Percent: pl.PlannedShare(), Speed: pl.Speed})
		}
	}
	return req, placedOn
}

// partJob is what Algorithm 1 knows of a job: an online job's measured
// load, and with the SLO guard its need (sloNeed), at most 0.999 of what
// it runs at alone in the largest instance top.
func (n *Node) partJob(j *jobs.Job, measured map[string]JobSLO, top sizedInstance) partitioner.Job {
	pj := partitioner.Job{ID: j.ID, Type: j.Type(), Online: j.Online(), MemoryMiB: j.MemoryMiB}
	if !pj.Online {
		return pj
	}
	need, load := n.sloNeed(j, measured[j.ID])
	pj.Load = load
	if n.cfg.SLOGuard && need > 0 && top.sms > 0 {
		probe := pj
		probe.MinSpeed = need
		alone, err := n.cfg.Estimator.Speed(probe, top.sms, top.gpuSMs, 100, nil)
		if err != nil {
			n.cfg.Log.Warn("SLO guard: no speed alone for the job; placed without its need", "job", j.ID, "err", err)
			return pj
		}
		pj.MinSpeed = min(need, 0.999*alone)
	}
	return pj
}

// waitedOut reports whether a waiting online job with a need has waited
// placement.slo_max_wait since it was submitted: it is placed where it
// fits, its need set aside.
func (n *Node) waitedOut(j *jobs.Job, pj partitioner.Job) bool {
	return pj.MinSpeed > 0 && n.cfg.SLOMaxWait > 0 && n.cfg.Now().Sub(j.CreatedAt) >= n.cfg.SLOMaxWait
}

// nextWaitOut is how long until the first waiting job with a need has
// waited placement.slo_max_wait (0: none waits on its need).
func (n *Node) nextWaitOut(waiting []partitioner.Job) time.Duration {
	if n.cfg.SLOMaxWait <= 0 {
		return 0
	}
	next := time.Duration(0)
	for _, w := range waiting {
		if w.MinSpeed <= 0 {
			continue
		}
		j, ok := n.get(w.ID)
		if !ok {
			continue
		}
		d := max(time.Millisecond, j.CreatedAt.Add(n.cfg.SLOMaxWait).Sub(n.cfg.Now()))
		if next == 0 || d < next {
			next = d
		}
	}
	return next
}

// sizedInstance is an instance's SMs on a GPU of gpuSMs.
type sizedInstance struct{ sms, gpuSMs int }

// largestInstance is the largest instance a job can be placed in: of
// the GPUs' instances, or, where mmk manages MIG, their whole-GPU
// profile.
func (n *Node) largestInstance(gpus []gpuInfo) sizedInstance {
	var top sizedInstance
	managed := n.migManaged(gpus)
	for _, g := range gpus {
		if g.skip != "" {
			continue
		}
		m := g.layout.Model
		for _, in := range g.layout.Instances {
			if in.Profile.SMs > top.sms {
				top = sizedInstance{in.Profile.SMs, m.SMs}
			}
		}
		if whole := m.Profiles[len(m.Profiles)-1]; managed && whole.SMs > top.sms {
			top = sizedInstance{whole.SMs, m.SMs}
		}
	}
	return top
}

// apply carries out one GPU's change. It returns when to decide again
// if part of it must wait (0: done); the jobs it was to start behind a
// MIG change that must wait go into deferred with the reason.
func (n *Node) apply(ctx context.Context, g gpuInfo, target partitioner.GPUPlan, ch partitioner.GPUChange, cause string, deferred map[string]string) time.Duration {
	start := n.cfg.Now()
	rec := jobs.Reconfig{Time: start, GPU: g.state.Index, Cause: cause, From: layoutText(g), To: layoutText(gpuInfo{layout: target.Layout, mig: g.mig})}
	// Restarts first: a moved job is stopped; it is placed again (by a
	// later decision) once it has exited.
	for _, id := range ch.Restart {
		if j, ok := n.get(id); ok && j.State == jobs.Running {
			n.restart(id, "moved by a reconfiguration: "+cause)
			rec.Restarted = append(rec.Restarted, id)
		}
	}
	if ch.MIG != nil {
		if holders := n.holders(g, ch.MIG); len(ch.Restart) > 0 || len(holders) > 0 {
			// The instances must be idle; the restarted jobs' exits wake
			// the loop, which decides (and likely plans this) again.
			n.cfg.Log.Info("placement: MIG change waits for its instances to empty", "gpu", g.state.Index, "to", rec.To)
			why := fmt.Sprintf("MIG change deferred: GPU %d's instances to change still hold %s", g.state.Index, strings.Join(holders, ", "))
			if len(holders) == 0 {
				why = fmt.Sprintf("MIG change deferred: GPU %d waits for %d restarted jobs to exit", g.state.Index, len(ch.Restart))
			}
			for _, id := range ch.Start {
				deferred[id] = why
			}
			if len(rec.Restarted) > 0 {
				n.record(rec, start)
			}
			return retryAfter
		}
		if err := n.applyMIG(g, target, &rec); err != nil {
			rec.Error = err.Error()
			n.record(rec, start)
			n.cfg.Log.Error("placement: MIG change failed", "gpu", g.state.Index, "err", err)
			return retryAfter
		}
		fresh, err := n.readGPUs()
		if err != nil {
			rec.Error = err.Error()
			n.record(rec, start)
			return retryAfter
		}
		i := slices.IndexFunc(fresh, func(x gpuInfo) bool { return x.state.Index == g.state.Index })
		if i < 0 {
			rec.Error = "the GPU is gone after the change"
			n.record(rec, start)
			return retryAfter
		}
		g = fresh[i]
	}
	postponed := false
	for _, id := range ch.Start {
		i := slices.IndexFunc(target.Jobs, func(p partitioner.Placed) bool { return p.Job.ID == id })
		if i < 0 {
			continue
		}
		p := target.Jobs[i]
		pl := jobs.Placement{
			GPU: g.state.Index, GPUUUID: g.state.UUID, Instance: p.Instance, InstanceKey: g.keys[p.Instance],
			InstanceName: g.names[p.Instance], Device: g.device[p.Instance], Share: p.Percent, Speed: p.Speed,
		}
		if n.cfg.MPS != nil {
			// Without MPS nothing enforces a share: none is set or shown.
			pl.MPSPercent = p.Percent
		}
		if g.mig {
			pl.Profile = g.layout.Instances[p.Instance].Profile.Name
		}
		if n.launch(ctx, id, pl, g) {
			postponed = true
			continue
		}
		n.noteBelowNeed(id, p.Speed)
		rec.Started = append(rec.Started, id)
	}
	if ch.MIG != nil || len(rec.Restarted) > 0 {
		n.record(rec, start)
	}
	if postponed {
		// Nothing else may happen on the node for a long time: a
		// postponed start must not wait for an unrelated event.
		return retryAfter
	}
	return 0
}

// applyMIG changes a GPU's layout to the target. Algorithm 1 plans from
// layouts, which carry no instance ids; the steps are planned again here
// from the instances the GPU holds (with their ids), the MPS daemons and
// kernel schedulers of the instances to destroy are stopped, and the plan
// is applied through the backend. After maxMIGFailures failures in a row
// mmkd stops changing layouts (and says so) rather than retry forever.
func (n *Node) applyMIG(g gpuInfo, target partitioner.GPUPlan, rec *jobs.Reconfig) error {
	r, err := partitioner.PlanReconfiguration(g.model, g.state.Instances, target.Layout)
	if err != nil {
		return n.migFailed(fmt.Errorf("plan: %w", err))
	}
	for _, s := range r.Steps {
		rec.Steps = append(rec.Steps, s.String())
	}
	for _, gi := range r.MustBeIdle {
		key := instanceKey(g.state.Index, gi.Profile, gi.Start)
		if n.cfg.MPS != nil && slices.Contains(n.cfg.MPS.Keys(), key) {
			if err := n.cfg.MPS.Quit(context.Background(), key); err != nil {
				n.cfg.Log.Warn("placement: quit the MPS daemon of an instance to destroy", "instance", key, "err", err)
			}
		}
		n.stopScheduler(key)
	}
	if err := partitioner.Apply(n.cfg.Backend, g.state.Index, r); err != nil {
		return n.migFailed(err)
	}
	n.migFailures = 0
	return nil
}

// maxMIGFailures is how many MIG changes in a row may fail before mmkd
// stops changing layouts.
const maxMIGFailures = 3

func (n *Node) migFailed(err error) error {
	n.migFailures++
	if n.migFailures >= maxMIGFailures && !n.migBroken {
		n.migBroken = true
		n.cfg.Log.Error("placement: MIG changes keep failing; layouts stay as they are until mmkd restarts", "failures", n.migFailures, "err", err)
	}
	return err
}

// holders are the jobs of mmk's, as "name (id)", that an instance the MIG
// change must destroy still holds.
func (n *Node) holders(g gpuInfo, r *partitioner.Reconfiguration) []string {
	keys := map[string]bool{}
	for _, gi := range r.MustBeIdle {
		keys[instanceKey(g.state.Index, gi.Profile, gi.Start)] = true
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []string
	for _, j := range n.order {
		if holdsInstance(j) && keys[j.Placement.InstanceKey] {
			kind := "offline"
			if j.Online() {
				kind = "online"
			}
			out = append(out, kind+" job "+j.Spec.Name+" ("+j.ID+")")
		}
	}
	return out
}

// holdsInstance reports whether job j holds the instance of its
// placement: it is placed, running, restarting or stopping after a
// cancel, with a placement.
func holdsInstance(j *jobs.Job) bool {
	live := j.State == jobs.Placed || j.State == jobs.Running || j.State == jobs.Restarting || stopping(j)
	return live && j.Placement != nil
}

// record stores a reconfiguration with its cost.
func (n *Node) record(r jobs.Reconfig, start time.Time) {
	r.Duration = n.cfg.Now().Sub(start)
	if _, err := n.cfg.Store.AddReconfig(r); err != nil {
		n.cfg.Log.Error("placement: record reconfiguration", "err", err)
	}
}

// layoutText is a GPU's layout as the history shows it.
func layoutText(g gpuInfo) string {
	if !g.mig {
		return "whole GPU"
	}
	if s := g.layout.String(); s != "" {
		return s
	}
	return "no instances"
}
