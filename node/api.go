package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// ErrNotReady is returned while the node recovers or after it stopped.
var ErrNotReady = errors.New("node is not ready")

// ErrCancelPending is a cancel whose stop could not reach the job's
// process: the job runs on, holding its place, and the node tries again
// every 2 s until the process is told to stop (the job is then
// cancelled).
var ErrCancelPending = errors.New("cancel pending")

// cancelTimeout bounds how long Cancel waits for the placement loop.
const cancelTimeout = 10 * time.Second

// Submit validates a spec, stores the job as pending, to run as owner
// (nil: mmkd's own user), and wakes the placement loop. With an
// idempotency key the owner used before, it returns the job created then
// and false. An owner the node may not run jobs as wraps
// jobs.ErrForbidden (see mayRunAs).
func (n *Node) Submit(ctx context.Context, spec jobs.Spec, idempotencyKey string, owner *jobs.Owner) (jobs.Job, bool, error) {
	if err := spec.Validate(); err != nil {
		return jobs.Job{}, false, err
	}
	if owner == nil {
		self := jobs.Self()
		owner = &self
	}
	// A claim job runs no process of mmkd's (the kubelet starts the
	// pod's containers): whom mmkd may run jobs as does not apply.
	if spec.Claim == nil {
		if err := n.mayRunAs(*owner); err != nil {
			return jobs.Job{}, false, err
		}
		if err := CheckWorkDir(spec, *owner); err != nil {
			return jobs.Job{}, false, err
		}
	}
	name, prio, mem, key := spec.Defaults(n.cfg.DefaultMemoryMiB)
	if n.maxMemoryMiB > 0 && mem > n.maxMemoryMiB {
		return jobs.Job{}, false, &jobs.FieldError{Field: "memoryMiB", Value: mem,
			Reason: fmt.Sprintf("no GPU instance of this node has that much memory (the largest: %d MiB)", n.maxMemoryMiB)}
	}
	spec.Name = name
	now := n.cfg.Now()
	j := jobs.Job{
		ID: jobs.NewID(now), Spec: spec, Priority: prio, MemoryMiB: mem, TaskKey: key,
		State: jobs.Pending, IdempotencyKey: idempotencyKey, CreatedAt: now, UpdatedAt: now, Owner: owner,
	}
	j, created, err := n.cfg.Store.Create(j)
	if err != nil {
		return jobs.Job{}, false, err
	}
	if created {
		n.mu.Lock()
		if _, ok := n.jobs[j.ID]; !ok {
			n.setLocked(j)
			n.arrivals = append(n.arrivals, j.ID)
		}
		n.mu.Unlock()
		n.wake()
	}
	return j, created, nil
}

// takeArrivals moves the jobs submitted since the last decision into its
// causes.
func (n *Node) takeArrivals() {
	n.mu.Lock()
	ids := n.arrivals
	n.arrivals = nil
	n.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	if n.firstArrival.IsZero() {
		n.firstArrival = now
	}
	n.lastArrival = now
	for _, id := range ids {
		n.causes = append(n.causes, arrivalCause+id)
	}
}

// arrivalCause starts the cause of a decision an arrival triggered.
const arrivalCause = "arrival of job "

// Jobs lists jobs, newest first, each with what holds it if it waits
// and what restrains it if its instance's latency controller does.
func (n *Node) Jobs(f JobFilter) ([]jobs.Job, error) {
	out := n.listJobs(f)
	n.withRestraints(out)
	return out, nil
}

// listJobs is Jobs's list, without restraints.
func (n *Node) listJobs(f JobFilter) []jobs.Job {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []jobs.Job
	end := len(n.order)
	if f.Before != "" {
		end = n.orderIndex(f.Before)
	}
	for i := end - 1; i >= 0; i-- {
		j := n.order[i]
		if len(f.States) > 0 && !slices.Contains(f.States, j.State) {
			continue
		}
		if f.Kind != "" && j.Spec.Kind != f.Kind {
			continue
		}
		if f.Name != "" && !strings.Contains(j.Spec.Name, f.Name) {
			continue
		}
		if f.Owner != "" && !OwnedBy(*j, f.Owner) {
			continue
		}
		out = append(out, n.withWait(*j))
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out
}

// JobsSince returns at most limit jobs changed after version since,
// oldest change first, and the job counts (see JobFeed); with limit 0 no
// job and the current version.
func (n *Node) JobsSince(since uint64, limit int) JobFeed {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.feed.Since(since, limit)
}

// Job returns one job, with what holds it if it waits and what
// restrains it if its instance's latency controller does.
func (n *Node) Job(id string) (jobs.Job, error) {
	n.mu.RLock()
	j, ok := n.jobs[id]
	var out jobs.Job
	if ok {
		out = n.withWait(*j)
	}
	n.mu.RUnlock()
	if !ok {
		return jobs.Job{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	one := []jobs.Job{out}
	n.withRestraints(one)
	return one[0], nil
}

// Events returns a job's transitions.
func (n *Node) Events(id string) ([]jobs.Event, error) { return n.cfg.Store.Events(id) }

// Cancel cancels a job on the placement loop.
func (n *Node) Cancel(id, reason string) (jobs.Job, error) {
	if j, ok := n.get(id); !ok {
		return jobs.Job{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	} else if j.IsClaim() {
		return jobs.Job{}, fmt.Errorf("cancel job %s: %w", id, ErrClaimJob)
	}
	var j jobs.Job
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if lerr := n.onLoop(ctx, func() {
		if j, err = n.cancel(id, reason); errors.Is(err, ErrCancelPending) {
			n.causes = append(n.causes, "pending cancel of job "+id) // its retries
		}
	}); lerr != nil {
		return jobs.Job{}, fmt.Errorf("cancel job %s: %w: %w", id, ErrNotReady, lerr)
	}
	return j, err
}

// LogPath is the job's log file.
func (n *Node) LogPath(id string) (string, error) {
	if _, ok := n.get(id); !ok {
		return "", fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	return n.cfg.Runner.LogPath(id), nil
}

// Plan is the current placement.
func (n *Node) Plan() PlanView {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.view
}

// Reconfigs are the last n reconfigurations, newest first.
func (n *Node) Reconfigs(limit int) ([]jobs.Reconfig, error) { return n.cfg.Store.Reconfigs(limit) }

// Ready is nil once the node has recovered and its backend answers.
func (n *Node) Ready(context.Context) error {
	if !n.ready.Load() {
		return ErrNotReady
	}
	if _, err := n.cfg.Backend.GPUs(); err != nil {
		return fmt.Errorf("GPU backend: %w", err)
	}
	return nil
}

// publishView rebuilds the plan view after a decision.
func (n *Node) publishView(gpus []gpuInfo) {
	n.pruneSchedulers(gpus)
	n.tellPlacedOffline()
	v := n.buildView(gpus)
	n.mu.Lock()
	v.Version = n.view.Version + 1
	n.view = v
	n.mu.Unlock()
	n.notify()
}

// buildView is the plan view of the GPUs with the jobs placed on them.
func (n *Node) buildView(gpus []gpuInfo) PlanView {
	v := PlanView{GPUs: []GPUView{}, Waiting: []string{}, WaitingJobs: []WaitingView{}, WaitingByClass: map[string]int{}, Decisions: n.decisions,
		DecideSeconds: n.decideTotal.Seconds(), LastDecideSeconds: n.decideTook.Seconds()}
	n.mu.RLock()
	defer n.mu.RUnlock()
	// The placed jobs by instance, in one pass.
	byInstance := map[string][]PlacedView{}
	speed := map[string]float64{}
	requested, running := map[string]int64{}, map[string]int64{}
	for _, j := range n.order {
		switch {
		case j.State == jobs.Pending:
			w, held := n.waits[j.ID]
			if v.WaitingTotal < MaxWaitingShown {
				v.Waiting = append(v.Waiting, j.ID)
				if held {
					v.WaitingJobs = append(v.WaitingJobs, WaitingView{ID: j.ID, Name: j.Spec.Name, Wait: w})
				}
			}
			if held {
				v.WaitingByClass[w.Class]++
			}
			v.WaitingTotal++
		case j.Placement != nil && !j.State.Terminal():
			k := j.Placement.InstanceKey
			byInstance[k] = append(byInstance[k], PlacedView{ID: j.ID, Name: j.Spec.Name, Kind: j.Spec.Kind, State: j.State,
				Percent: j.Placement.MPSPercent, Speed: j.Placement.Speed, MemoryMiB: j.MemoryMiB})
			speed[k] += j.Placement.Speed
			requested[k] += j.MemoryMiB
			if j.State == jobs.Running {
				running[k] += j.MemoryMiB
			}
		}
	}
	var mpsKeys []string
	if n.cfg.MPS != nil {
		mpsKeys = n.cfg.MPS.Keys()
	}
	for _, g := range gpus {
		gv := GPUView{Index: g.state.Index, UUID: g.state.UUID, Name: g.state.Name, Model: g.state.Model,
			MIG: g.mig, Layout: g.state.Layout, SMs: g.state.SMs, MemoryMiB: g.state.MemoryMiB, Instances: []InstanceView{}}
		for i, in := range g.layout.Instances {
			iv := InstanceView{Name: g.names[i], Index: i, Key: g.keys[i], Profile: in.Profile.Name, Start: in.Start, Size: in.Profile.MemorySlices,
				ComputeSlices: in.Profile.ComputeSlices, SMs: in.Profile.SMs, MemoryMiB: in.Profile.MemoryMiB,
				Device: g.device[i], MPS: slices.Contains(mpsKeys, g.keys[i]), Jobs: byInstance[g.keys[i]],
				RequestedMiB: requested[g.keys[i]], RunningMiB: running[g.keys[i]]}
			if iv.Jobs == nil {
				iv.Jobs = []PlacedView{}
			}
			if g.mig {
				gi := g.state.Instances[i].ID
				iv.GI = &gi
			} else {
				iv.SMs, iv.MemoryMiB, iv.Profile = g.state.SMs, g.state.MemoryMiB, ""
			}
			v.Total += speed[iv.Key]
			gv.Instances = append(gv.Instances, iv)
		}
		v.GPUs = append(v.GPUs, gv)
	}
	return v
}
