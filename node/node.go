package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/trace"
)

// Runner starts, stops and watches job processes (jobs.Runner).
type Runner interface {
	Start(l jobs.Launch) (jobs.Proc, error)
	Adopt(id string) (jobs.Proc, *jobs.Exit, error)
	Wait(ctx context.Context, id string) <-chan jobs.Exit
	Stop(id string, grace time.Duration) error
	LogPath(id string) string
	CheckpointDir(id string) (string, error)
}

// Config wires a node.
type Config struct {
	Backend   partitioner.Backend
	Store     *jobs.Store
	Runner    Runner
	Estimator partitioner.Estimator
	// MPS runs one MPS daemon per instance with jobs; nil: none (the
	// percentages are still given to jobs, but nothing enforces them).
	MPS *mps.Manager
	// ManageMIG lets the placement loop change MIG layouts (mig.manage);
	// off, layouts are never touched.
	ManageMIG bool
	// Sched runs kernel scheduler servers and attaches the hook; nil: no
	// kernel scheduling.
	Sched *SchedConfig
	// DefaultMemoryMiB is the memory of a job that gave none.
	DefaultMemoryMiB int64
	// StopGrace is how long a stopped job has between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// BaseEnv is the environment every job starts from (mmkd's own, less
	// what mmk sets).
	BaseEnv []string
	Log     *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Node is mmkd's job keeper and placement loop. Its methods are safe for
// concurrent use; job state changes other than submission happen on the
// loop's goroutine (Run), in the order they are written to the store.
type Node struct {
	cfg Config
	est partitioner.Estimator

	mu    sync.RWMutex
	jobs  map[string]*jobs.Job
	order []*jobs.Job // the jobs of the map, in creation (id) order
	view  PlanView
	// arrivals are jobs submitted since the loop last looked.
	arrivals []string
	scheds   map[string]*sched

	// changed is closed at the next change (Changed).
	changeMu sync.Mutex
	changed  chan struct{}

	poke  chan struct{}
	reqs  chan func()
	exits chan exitEvent
	ready atomic.Bool

	// Loop-owned.
	causes []string
	// firstArrival and lastArrival bound the arrivals not yet decided.
	firstArrival, lastArrival time.Time
	phases                    map[string]*trace.ProfilePhase // profiling phases by job id
	watching                  map[string]context.CancelFunc
	decisions                 int
	// maxMemoryMiB is the largest job memory any instance (or, when MIG is
	// managed, any GPU) can hold, read at start.
	maxMemoryMiB int64
}

// profileCollectEvery is how often the loop looks for the traces of
// profiling phases.
const profileCollectEvery = 500 * time.Millisecond

// Arrivals are placed in batches: a decision caused by arrivals alone
// waits until none came for arrivalQuiet, at most arrivalMax after the
// first, so that jobs submitted together are placed together rather than
// one by one, each arrival re-sharing (and restarting) the ones before.
const (
	arrivalQuiet = 250 * time.Millisecond
	arrivalMax   = 2 * time.Second
)

// batching returns how long the decision should wait for more arrivals
// (0: decide now).
func (n *Node) batching() time.Duration {
	if len(n.causes) == 0 || n.firstArrival.IsZero() {
		return 0
	}
	for _, c := range n.causes {
		if !strings.HasPrefix(c, arrivalCause) {
			return 0
		}
	}
	now := time.Now()
	wait := min(n.lastArrival.Add(arrivalQuiet).Sub(now), n.firstArrival.Add(arrivalMax).Sub(now))
	return max(wait, 0)
}

// minDecisionGap is the least time between two runs of the placement
// loop's decision: a burst of arrivals waits at most this long.
const minDecisionGap = 5 * time.Millisecond

type exitEvent struct {
	id   string
	exit jobs.Exit
}

// New checks the configuration and loads the jobs from the store.
func New(cfg Config) (*Node, error) {
	if cfg.Backend == nil || cfg.Store == nil || cfg.Runner == nil || cfg.Estimator == nil {
		return nil, errors.New("node: backend, store, runner and estimator are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultMemoryMiB <= 0 {
		cfg.DefaultMemoryMiB = 4096
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	n := &Node{
		cfg: cfg, est: cfg.Estimator, jobs: map[string]*jobs.Job{}, scheds: map[string]*sched{},
		poke: make(chan struct{}, 1), reqs: make(chan func()), exits: make(chan exitEvent, 64),
		watching: map[string]context.CancelFunc{}, phases: map[string]*trace.ProfilePhase{},
	}
	all, err := cfg.Store.All()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	for i := range all {
		j := all[i]
		n.jobs[j.ID] = &j
		n.order = append(n.order, &j)
	}
	gpus, err := n.readGPUs()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.maxMemoryMiB = maxJobMemory(gpus, cfg.ManageMIG)
	n.view = n.buildView(gpus)
	return n, nil
}

// Run recovers the jobs that were running when mmkd last stopped, then
// runs the placement loop until ctx ends. Jobs keep running after it
// returns: they outlive mmkd, and the next Run adopts them.
func (n *Node) Run(ctx context.Context) error {
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.recover(loopCtx)
	n.ready.Store(true)
	defer n.ready.Store(false)
	defer n.stopSchedulers()
	n.causes = append(n.causes, "start")
	n.decide(loopCtx)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	collect := time.NewTicker(profileCollectEvery)
	defer collect.Stop()
	batch := time.NewTimer(time.Hour)
	defer batch.Stop()
	last, gap := time.Now(), time.Duration(minDecisionGap)
	for {
		select {
		case <-ctx.Done():
			for _, stop := range n.watching {
				stop()
			}
			return nil
		case <-n.poke:
		case f := <-n.reqs:
			f()
		case e := <-n.exits:
			n.exited(loopCtx, e)
		case <-retry.C:
			n.causes = append(n.causes, "retry")
		case <-batch.C:
		case <-collect.C:
			if len(n.phases) > 0 {
				n.collectProfiles()
			}
		}
		// Take whatever else is queued before deciding once.
		for drained := false; !drained; {
			select {
			case f := <-n.reqs:
				f()
			case e := <-n.exits:
				n.exited(loopCtx, e)
			case <-n.poke:
			default:
				drained = true
			}
		}
		n.takeArrivals()
		if wait := n.batching(); wait > 0 {
			batch.Reset(wait)
			continue
		}
		if len(n.causes) > 0 {
			// A burst of submissions is decided in few runs: a run costs
			// O(pending jobs), so the next one waits minDecisionGap or
			// four times as long as the last took, whichever is longer
			// (the loop spends at most a fifth of a CPU deciding).
			if wait := gap - time.Since(last); wait > 0 {
				time.Sleep(wait)
				n.takeArrivals()
			}
			last = time.Now()
			again := n.decide(loopCtx)
			gap = max(minDecisionGap, 4*time.Since(last))
			if again > 0 {
				retry.Reset(again)
			}
		}
	}
}

// wake asks the loop to decide again.
func (n *Node) wake() {
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

// onLoop runs f on the loop's goroutine and waits for it; it fails when
// ctx ends first (or the loop is not running).
func (n *Node) onLoop(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case n.reqs <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// get returns a copy of a job.
func (n *Node) get(id string) (jobs.Job, bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	j, ok := n.jobs[id]
	if !ok {
		return jobs.Job{}, false
	}
	return *j, true
}

// set records a job's new state in memory, after the store has it. An
// existing job is updated in place: the map and the ordered list share it.
func (n *Node) set(j jobs.Job) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setLocked(j)
}

func (n *Node) setLocked(j jobs.Job) {
	defer n.notify()
	if p, ok := n.jobs[j.ID]; ok {
		*p = j
		return
	}
	p := &j
	n.jobs[j.ID] = p
	// Ids sort by creation time; concurrent submissions may land out of
	// order.
	i, _ := slices.BinarySearchFunc(n.order, j.ID, func(x *jobs.Job, id string) int { return strings.Compare(x.ID, id) })
	n.order = slices.Insert(n.order, i, p)
}

// move writes a transition to the store, then to memory.
func (n *Node) move(id string, to jobs.State, reason string, fn func(*jobs.Job)) (jobs.Job, error) {
	j, err := n.cfg.Store.Transition(id, to, n.cfg.Now(), reason, fn)
	if err != nil {
		return jobs.Job{}, err
	}
	n.set(j)
	n.cfg.Log.Info("job", "id", id, "state", to, "reason", reason)
	return j, nil
}

// update writes fields other than the state to the store, then to memory.
func (n *Node) update(id string, fn func(*jobs.Job)) (jobs.Job, error) {
	j, err := n.cfg.Store.Update(id, n.cfg.Now(), fn)
	if err != nil {
		return jobs.Job{}, err
	}
	n.set(j)
	return j, nil
}

// inState lists the ids of jobs in the given states, in creation order.
func (n *Node) inState(states ...jobs.State) []string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []string
	for _, j := range n.order {
		if slices.Contains(states, j.State) {
			out = append(out, j.ID)
		}
	}
	return out
}

// Changed returns a channel closed at the next change of a job, the plan
// or the kernel schedulers.
func (n *Node) Changed() <-chan struct{} {
	n.changeMu.Lock()
	defer n.changeMu.Unlock()
	if n.changed == nil {
		n.changed = make(chan struct{})
	}
	return n.changed
}

// notify wakes those waiting on Changed.
func (n *Node) notify() {
	n.changeMu.Lock()
	defer n.changeMu.Unlock()
	if n.changed != nil {
		close(n.changed)
		n.changed = nil
	}
}
