// Package webtest holds a fake of the node that the web package serves,
// for tests of the API and of clients of it (mmkctl). The fake keeps the
// contracts of the real node: it validates specs, honours idempotency
// keys, lists newest first, refuses to cancel a finished job with a
// *jobs.TransitionError and a claim job with node.ErrClaimJob, and
// answers unknown ids with jobs.ErrNotFound.
// It runs no process: tests move jobs between states with SetState and
// write their logs under LogPath. It runs jobs as their owners under the
// real node's rule (node.MayRunAs), as a node with jobs.allow_root on
// unless SetAllowRoot says otherwise.
package webtest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// DefaultMemoryMiB is the memory a fake job gets when its spec gives none.
const DefaultMemoryMiB = 4096

// FakeNode is an in-memory node. It is safe for concurrent use.
type FakeNode struct {
	logDir string

	mu         sync.Mutex
	now        time.Time
	jobs       map[string]*jobs.Job
	order      []string // ids in creation order
	feed       *node.Feed
	events     map[string][]jobs.Event
	idem       map[string]string
	plan       node.PlanView
	reconfigs  []jobs.Reconfig // oldest first
	scheds     []node.SchedView
	readyErr   error
	fail       error
	allowRoot  bool
	changed    chan struct{} // closed at the next change (Changed)
	usage      node.UsageView
	history    map[string][]node.UsageSample
	slo        node.SLOView
	sloHistory map[string][]node.SLOPoint
	health     node.HealthView
}

// NewFakeNode returns an empty fake whose job logs live in logDir.
func NewFakeNode(logDir string) *FakeNode {
	return &FakeNode{
		logDir:    logDir,
		allowRoot: true,
		now:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		jobs:      map[string]*jobs.Job{},
		feed:      node.NewFeed(),
		events:    map[string][]jobs.Event{},
		idem:      map[string]string{},
	}
}

// tick advances the fake clock by a millisecond, so that ids and times
// order the jobs.
func (f *FakeNode) tick() time.Time {
	f.now = f.now.Add(time.Millisecond)
	return f.now
}

// Submit validates and stores a job as pending, owned by owner (nil:
// the process's user). With an idempotency key the owner used before it
// returns the job created then and false. An owner the node may not run
// jobs as wraps jobs.ErrForbidden.
func (f *FakeNode) Submit(_ context.Context, spec jobs.Spec, idempotencyKey string, owner *jobs.Owner) (jobs.Job, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return jobs.Job{}, false, f.fail
	}
	if err := spec.Validate(); err != nil {
		return jobs.Job{}, false, err
	}
	if owner == nil {
		self := jobs.Self()
		owner = &self
	}
	if err := node.MayRunAs(*owner, f.allowRoot); err != nil {
		return jobs.Job{}, false, err
	}
	name, prio, mem, key := spec.Defaults(DefaultMemoryMiB)
	spec.Name = name
	idem := fmt.Sprint(owner.UID) + "/" + idempotencyKey
	if id, ok := f.idem[idem]; ok && idempotencyKey != "" {
		if !jobs.SameSpec(f.jobs[id].Spec, spec) {
			return jobs.Job{}, false, fmt.Errorf("key %q (job %s): %w", idempotencyKey, id, jobs.ErrIdempotencyConflict)
		}
		return *f.jobs[id], false, nil
	}
	now := f.tick()
	j := &jobs.Job{ID: jobs.NewID(now), Spec: spec, Priority: prio, MemoryMiB: mem, TaskKey: key,
		State: jobs.Pending, IdempotencyKey: idempotencyKey, CreatedAt: now, UpdatedAt: now, Owner: owner}
	f.jobs[j.ID] = j
	f.order = append(f.order, j.ID)
	f.feed.Set(j)
	f.events[j.ID] = []jobs.Event{{Seq: 1, Time: now, To: jobs.Pending, Reason: "submitted"}}
	if idempotencyKey != "" {
		f.idem[idem] = j.ID
	}
	f.notifyLocked()
	return *j, true, nil
}

// Put stores a job record as it is, in whatever state and with whatever
// fields (a placement, a grant, an exit), as the placement loop and the
// runner would have left it; its id must be new.
func (f *FakeNode) Put(j jobs.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[j.ID] = &j
	f.order = append(f.order, j.ID)
	f.feed.Set(&j)
	f.events[j.ID] = []jobs.Event{{Seq: 1, Time: j.CreatedAt, To: j.State, Reason: "put"}}
	f.notifyLocked()
}

// Jobs lists the jobs the filter selects, newest first.
func (f *FakeNode) Jobs(flt node.JobFilter) ([]jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []jobs.Job
	for i := len(f.order) - 1; i >= 0; i-- {
		j := f.jobs[f.order[i]]
		if flt.Before != "" && j.ID >= flt.Before {
			continue
		}
		if len(flt.States) > 0 && !slices.Contains(flt.States, j.State) ||
			flt.Kind != "" && j.Spec.Kind != flt.Kind ||
			!strings.Contains(j.Spec.Name, flt.Name) ||
			flt.Owner != "" && !node.OwnedBy(*j, flt.Owner) {
			continue
		}
		out = append(out, *j)
		if flt.Limit > 0 && len(out) == flt.Limit {
			break
		}
	}
	return out, nil
}

// JobsSince returns the jobs changed after version since (node.Feed).
func (f *FakeNode) JobsSince(since uint64, limit int) node.JobFeed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.feed.Since(since, limit)
}

// Job returns one job.
func (f *FakeNode) Job(id string) (jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, err := f.get(id)
	if err != nil {
		return jobs.Job{}, err
	}
	return *j, nil
}

// get is the job of id as the API reads it: the failure Fail set, if
// any, else lookup's.
func (f *FakeNode) get(id string) (*jobs.Job, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return f.lookup(id)
}

// lookup is the job of id, or jobs.ErrNotFound; the setters that stand
// for the placement loop and the runner use it (Fail is for the API).
func (f *FakeNode) lookup(id string) (*jobs.Job, error) {
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	return j, nil
}

// Events returns a job's transitions, oldest first.
func (f *FakeNode) Events(id string) ([]jobs.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, err
	}
	return slices.Clone(f.events[id]), nil
}

// Cancel moves a job to cancelled; a finished one is a
// *jobs.TransitionError, a claim job node.ErrClaimJob (it ends when
// Kubernetes releases its claim), as the real node answers.
func (f *FakeNode) Cancel(id, reason string) (jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, err := f.get(id)
	if err != nil {
		return jobs.Job{}, err
	}
	if j.IsClaim() {
		return jobs.Job{}, fmt.Errorf("cancel job %s: %w", id, node.ErrClaimJob)
	}
	if !j.State.CanMove(jobs.Cancelled) {
		return jobs.Job{}, &jobs.TransitionError{ID: id, From: j.State, To: jobs.Cancelled}
	}
	f.move(j, jobs.Cancelled, reason)
	return *j, nil
}

// SetState forces a job into a state, recording the event, whatever the
// state machine says (tests use it to stand for the placement loop and
// the runner).
func (f *FakeNode) SetState(id string, to jobs.State, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, err := f.lookup(id)
	if err != nil {
		return err
	}
	f.move(j, to, reason)
	return nil
}

// SetWait says what holds a pending job, as the placement loop would
// (the job object's Wait, until the job leaves pending).
func (f *FakeNode) SetWait(id string, w jobs.Wait) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, err := f.lookup(id)
	if err != nil {
		return err
	}
	if j.State != jobs.Pending {
		return fmt.Errorf("job %s is %s: only a pending job waits", id, j.State)
	}
	j.Wait = &w
	f.notifyLocked()
	return nil
}

func (f *FakeNode) move(j *jobs.Job, to jobs.State, reason string) {
	defer f.notifyLocked()
	if to != jobs.Pending {
		j.Wait = nil
	}
	now := f.tick()
	f.events[j.ID] = append(f.events[j.ID], jobs.Event{Seq: len(f.events[j.ID]) + 1, Time: now, From: j.State, To: to, Reason: reason})
	j.State, j.Reason, j.UpdatedAt = to, reason, now
	if to.Terminal() {
		j.FinishedAt = now
	}
	f.feed.Set(j)
}

// LogPath is <logDir>/<id>.log.
func (f *FakeNode) LogPath(id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return "", err
	}
	return filepath.Join(f.logDir, id+".log"), nil
}

// Plan returns the plan SetPlan set.
func (f *FakeNode) Plan() node.PlanView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plan
}

// SetPlan sets the plan.
func (f *FakeNode) SetPlan(p node.PlanView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.Version = f.plan.Version + 1
	f.plan = p
	f.notifyLocked()
}

// Reconfigs returns the last n reconfigurations, newest first (n <= 0:
// all).
func (f *FakeNode) Reconfigs(n int) ([]jobs.Reconfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []jobs.Reconfig
	for i := len(f.reconfigs) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		out = append(out, f.reconfigs[i])
	}
	return out, nil
}

// AddReconfig records a reconfiguration with the next number.
func (f *FakeNode) AddReconfig(r jobs.Reconfig) jobs.Reconfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Seq = len(f.reconfigs) + 1
	f.reconfigs = append(f.reconfigs, r)
	return r
}

// Schedulers returns what SetSchedulers set.
func (f *FakeNode) Schedulers() []node.SchedView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.scheds)
}

// SetSchedulers sets the kernel schedulers.
func (f *FakeNode) SetSchedulers(s []node.SchedView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scheds = s
	f.notifyLocked()
}

// Changed returns a channel closed at the next change the fake makes (a
// job moved or created, the plan or the schedulers set), as the real
// node's is.
func (f *FakeNode) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// notifyLocked wakes those waiting on Changed; f.mu is held.
func (f *FakeNode) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// Ready returns what SetReady set (nil at first).
func (f *FakeNode) Ready(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyErr
}

// MayRunAs is the refusal Submit gives owner, nil if none.
func (f *FakeNode) MayRunAs(owner jobs.Owner) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return node.MayRunAs(owner, f.allowRoot)
}

// SetAllowRoot says whether the fake runs jobs as root (jobs.allow_root;
// true at first).
func (f *FakeNode) SetAllowRoot(allow bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowRoot = allow
}

// SetReady sets Ready's answer.
func (f *FakeNode) SetReady(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readyErr = err
}

// Fail makes every method that can fail return err (nil: none), as a
// node whose store broke would.
func (f *FakeNode) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// SetPlacement gives a job a placement and a process, as the placement
// loop and the runner would (the start time too, if it has none).
func (f *FakeNode) SetPlacement(id string, p jobs.Placement, pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, err := f.lookup(id)
	if err != nil {
		return err
	}
	now := f.tick()
	j.Placement, j.PID, j.UpdatedAt = &p, pid, now
	if j.StartedAt.IsZero() {
		j.StartedAt = now
	}
	f.feed.Set(j)
	f.notifyLocked()
	return nil
}
