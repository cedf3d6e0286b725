package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/trace"
)

// Runner starts, stops and watches job processes (jobs.Runner).
type Runner interface {
	Reset(id string) error
	Start(l jobs.Launch) (jobs.Proc, error)
	Adopt(id string) (jobs.Proc, *jobs.Exit, error)
	Wait(ctx context.Context, id string) <-chan jobs.Exit
	Stop(id string, grace time.Duration) error
	LogPath(id string) string
	CheckpointDir(id string) (string, error)
	Remove(id string) error
	JobIDs() ([]string, error)
	Record(id string) (jobs.Job, bool, error)
	HasRun(id string) bool
	StartedPID(id string) int
	Freeze(id string, frozen bool) (bool, error)
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
	// PriorityShares places jobs with partitioner.Options.PriorityShares
	// (mps.priority_shares) where MPS runs: offline jobs, below online
	// ones in MPS client priority, share instances at shares summing above
	// 100 %.
	PriorityShares bool
	// Spread puts each job into the least busy instance
	// (placement.spread, partitioner.Options.Spread).
	Spread bool
	// SLOGuard places a job only where every online job with a latency
	// target on the instance keeps the speed its target needs
	// (placement.slo_guard, partitioner.Options.SLOGuard; sloNeed).
	SLOGuard bool
	// SLOMaxWait is how long a waiting online job's own need holds it
	// back (placement.slo_max_wait; 0: as long as it takes).
	SLOMaxWait time.Duration
	// Move moves offline jobs off GPUs whose services are strained
	// (placement.move_after; move.go); its zero value never moves.
	Move MoveConfig
	// controllerViews, when set, stands for the instances' latency
	// controllers in what moves read (tests); nil: the kernel schedulers'.
	controllerViews func() map[string]server.SLOView
	// Sched runs kernel scheduler servers and attaches the hook; nil: no
	// kernel scheduling.
	Sched *SchedConfig
	// SLO is the latency controller of each instance's kernel scheduler
	// (slo.go); nil: none (requests are not measured).
	SLO *SLOConfig
	// DefaultMemoryMiB is the memory of a job that gave none.
	DefaultMemoryMiB int64
	// MemLimit says which jobs' MPS clients get a device memory limit
	// (where MPS runs) and its margin above their memory.
	MemLimit MemLimitConfig
	// UsageEvery is how often the jobs' GPU use and the GPUs' health
	// are read when the backend can read them (default a second;
	// negative: never).
	UsageEvery time.Duration
	// AllowRoot lets jobs run as root (jobs.allow_root): a job submitted
	// by root, or over TCP to an mmkd that runs as root, is refused
	// without it.
	AllowRoot bool
	// StopGrace is how long a stopped job has between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// Retention is how long a finished job (its record, events, log and
	// checkpoint) is kept; 0 keeps it forever.
	Retention time.Duration
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
	// feed numbers the jobs' changes for live views (JobsSince).
	feed *Feed
	view PlanView
	// arrivals are jobs submitted since the loop last looked.
	arrivals []string
	scheds   map[string]*sched
	// claimMu orders the preparation and release of claims (claims.go).
	claimMu sync.Mutex

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
	// decideTook is how long Algorithm 1 took in the last decision.
	decideTook time.Duration
	// decideTotal is the time Algorithm 1 took over every decision.
	decideTotal time.Duration
	// stopRetry are jobs whose stop request failed; each decision asks
	// again, and decisions come every retryAfter while there are any.
	stopRetry map[string]bool
	// cancels are the cancels not yet recorded, by job, with their
	// reasons: the stop failed (tried again every retryAfter), or the
	// job was told to stop and its move to cancelled is not written yet.
	cancels map[string]string
	// strain is the strained instances and the moved jobs (move.go);
	// its avoid map is read under mu by request.
	strain strainState
	// envFailures counts, per job, starts that failed before the process
	// (an MPS daemon, a scheduler); the job goes back to pending until
	// maxEnvFailures.
	envFailures map[string]int
	// migFailures counts MIG changes that failed in a row; migBroken
	// stops further ones.
	migFailures int
	migBroken   bool
	phases      map[string]*trace.ProfilePhase // profiling phases by job id
	watching    map[string]context.CancelFunc
	decisions   int
	// waits is what holds each waiting job, by id, as the last decision
	// found (wait.go); under mu.
	waits map[string]jobs.Wait
	// restarts is what the restart gate weighs: measured stops and
	// start-ups.
	restarts *restartBook
	// maxMemoryMiB is the largest job memory any instance (or, when MIG is
	// managed, any GPU) can hold, read at start.
	maxMemoryMiB int64

	// usage is each job's GPU use, sampled by sampleUsage; usageAt is when.
	usageMu sync.Mutex
	usage   map[string]*jobUsage
	usageAt time.Time
	// usageDevices is the memory in use on each device at usageAt.
	usageDevices []DeviceMemory

	// health is the GPUs' health, sampled by sampleHealth.
	healthMu sync.Mutex
	health   healthState

	// slo is what the latency controllers did to jobs (slo.go).
	slo sloState
	// masks are the GPUs' TPC masks (masks.go).
	masks masks
}

// pruneEvery is how often finished jobs past their retention are removed.
const pruneEvery = time.Hour

// prune removes the jobs that finished more than Retention ago: their
// store records, directories (log, checkpoint) and memory.
func (n *Node) prune() { n.pruneAt(n.cfg.Now()) }

// pruneAt is prune as of now.
func (n *Node) pruneAt(now time.Time) {
	if n.cfg.Retention <= 0 {
		return
	}
	cutoff := now.Add(-n.cfg.Retention)
	var old []string
	n.mu.RLock()
	for _, j := range n.order {
		end := j.FinishedAt
		if end.IsZero() {
			end = j.UpdatedAt
		}
		if j.State.Terminal() && end.Before(cutoff) {
			old = append(old, j.ID)
		}
	}
	n.mu.RUnlock()
	removed := map[string]bool{}
	for _, id := range old {
		if err := n.cfg.Runner.Remove(id); err != nil && !errors.Is(err, fs.ErrNotExist) {
			n.cfg.Log.Warn("retention: keep a job whose directory cannot be removed", "job", id, "err", err)
			continue
		}
		if err := n.cfg.Store.Delete(id); err != nil {
			n.cfg.Log.Warn("retention: delete job", "job", id, "err", err)
			continue
		}
		removed[id] = true
	}
	if len(removed) == 0 {
		return
	}
	n.mu.Lock()
	for id := range removed {
		delete(n.jobs, id)
		n.feed.Remove(id)
	}
	n.order = slices.DeleteFunc(n.order, func(j *jobs.Job) bool { return removed[j.ID] })
	n.mu.Unlock()
	n.cfg.Log.Info("retention: removed finished jobs", "jobs", len(removed), "olderThan", n.cfg.Retention)
	n.notify()
}

// profileCollectEvery is how often the loop looks for the traces of
// profiling phases.
const profileCollectEvery = 500 * time.Millisecond

// Arrivals are placed in batches: a decision caused by arrivals alone
// waits until none came for arrivalQuiet, at most arrivalMax after the
// first, so that jobs submitted together are placed together rather than
// one by one, each arrival re-sharing (and restarting) the ones before.
// Under priority shares with MIG left as it is no arrival moves a running
// job, so arrivals are placed at once.
const (
	arrivalQuiet = 250 * time.Millisecond
	arrivalMax   = 2 * time.Second
)

// batching returns how long the decision should wait for more arrivals
// (0: decide now).
func (n *Node) batching() time.Duration {
	if len(n.causes) == 0 || n.firstArrival.IsZero() || n.arrivalsMoveNothing() {
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

// arrivalsMoveNothing reports whether no arrival can restart a running
// job: priority shares keep every running job's share, and a layout
// mmkd does not manage stays.
func (n *Node) arrivalsMoveNothing() bool {
	return n.cfg.PriorityShares && n.cfg.MPS != nil && !n.cfg.ManageMIG
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
	if cfg.UsageEvery == 0 {
		cfg.UsageEvery = time.Second
	}
	switch cfg.MemLimit.Mode {
	case "":
		cfg.MemLimit.Mode = MemLimitSpec
	case MemLimitSpec, MemLimitAll, MemLimitOff:
	default:
		return nil, fmt.Errorf("node: memory limit mode %q is not one of %s, %s, %s", cfg.MemLimit.Mode, MemLimitSpec, MemLimitAll, MemLimitOff)
	}
	if cfg.MemLimit.MarginPct < 0 || cfg.MemLimit.MarginMiB < 0 {
		return nil, fmt.Errorf("node: memory limit margin %d %% + %d MiB is negative", cfg.MemLimit.MarginPct, cfg.MemLimit.MarginMiB)
	}
	n := &Node{
		cfg: cfg, est: cfg.Estimator, jobs: map[string]*jobs.Job{}, feed: NewFeed(), scheds: map[string]*sched{},
		poke: make(chan struct{}, 1), reqs: make(chan func()), exits: make(chan exitEvent, 64),
		watching: map[string]context.CancelFunc{}, phases: map[string]*trace.ProfilePhase{},
		stopRetry: map[string]bool{}, cancels: map[string]string{}, envFailures: map[string]int{}, restarts: newRestartBook(),
		strain: strainState{since: map[string]time.Time{}, avoid: map[string]int{}, at: map[string]time.Time{}, moved: map[string]time.Time{},
			masked: map[string]maskSpan{}, calm: map[string]time.Time{}, dearNoted: map[string]bool{}},
		usage: map[string]*jobUsage{},
		slo:   sloState{suspended: map[string]int{}, notes: map[string]int{}, last: map[string]JobSLO{}, base: map[string]jobs.SLOSeen{}},
	}
	for _, r := range cfg.Store.SetAside() {
		cfg.Log.Error("job store: a record that cannot be read was set aside (kept in the store's set-aside bucket)", "bucket", r.Bucket, "key", r.Key, "reason", r.Reason)
	}
	if pb := cfg.Store.PutBack(); len(pb) > 0 {
		cfg.Log.Error("job store: the records damage took were put back from the backup; what the store held newer stays", "records", len(pb), "list", strings.Join(pb, ", "))
	}
	if err := cfg.Store.PutBackError(); err != nil {
		cfg.Log.Error("job store: the records set aside could not be put back from the backup: the jobs among them are missing", "err", err)
	}
	if k := cfg.Store.KeysMended(); len(k) > 0 {
		cfg.Log.Warn("job store: idempotency keys that did not find their job were put again from the job records", "keys", len(k))
	}
	all, err := cfg.Store.All()
	if err != nil {
		return nil, fmt.Errorf("node: recovery: %w", err)
	}
	if adopted, err := n.adoptOrphans(all); err != nil {
		return nil, fmt.Errorf("node: recovery: %w", err)
	} else if adopted > 0 {
		cfg.Log.Warn("recovery: jobs adopted from their directories", "jobs", adopted)
		// Read again: the store now holds the adopted jobs.
		if all, err = cfg.Store.All(); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	// The node's jobs are the slice read, each in place (a job copied to
	// the heap one by one, and the map grown to 30,000 of them, were a
	// third of node.New at that many jobs).
	n.jobs = make(map[string]*jobs.Job, len(all))
	n.order = make([]*jobs.Job, 0, len(all))
	n.feed.reserve(len(all))
	for i := range all {
		j := &all[i]
		n.jobs[j.ID] = j
		n.order = append(n.order, j)
		n.feed.Set(j)
		if j.SLOSeen != nil {
			n.slo.base[j.ID] = *j.SLOSeen
		}
	}
	gpus, err := n.readGPUs()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.maxMemoryMiB = maxJobMemory(gpus, n.migManaged(gpus))
	n.view = n.buildView(gpus)
	return n, nil
}

// Run recovers the jobs that were running when mmkd last stopped, then
// runs the placement loop until ctx ends. Jobs keep running after it
// returns: they outlive mmkd, and the next Run adopts them.
func (n *Node) Run(ctx context.Context) error {
	loopCtx, cancel := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	defer func() {
		cancel()
		sampling.Wait()
	}()
	if r := n.usageReader(); r != nil && n.cfg.UsageEvery > 0 {
		sampling.Go(func() { n.poll(loopCtx, "GPU use of jobs: read the devices", func() error { return n.sampleUsage(r) }) })
	}
	if r := n.healthReader(); r != nil && n.cfg.UsageEvery > 0 {
		sampling.Go(func() { n.poll(loopCtx, "GPU health: read the GPUs", func() error { return n.sampleHealth(r) }) })
	}
	if n.cfg.SLO != nil {
		sampling.Go(func() { n.keepSLOSeen(loopCtx) })
	}
	if gpus, err := n.readGPUs(); err == nil {
		n.startMasks(loopCtx, &sampling, gpus)
	} else {
		n.cfg.Log.Error("slo: TPC masks: read GPUs", "err", err)
	}
	n.recover(loopCtx)
	n.serveAdopted(loopCtx)
	n.prune()
	n.ready.Store(true)
	defer n.ready.Store(false)
	defer n.stopSchedulers()
	n.causes = append(n.causes, "start")
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	if again := n.decide(loopCtx); again > 0 {
		retry.Reset(again)
	}
	collect := time.NewTicker(profileCollectEvery)
	defer collect.Stop()
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	// hold delays a decision: a batch of arrivals gathering, or the gap
	// after the last one.
	hold := time.NewTimer(time.Hour)
	defer hold.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			for _, stop := range n.watching {
				stop()
			}
			if n.cfg.SLO != nil {
				if err := n.saveSLOSeen(); err != nil {
					n.cfg.Log.Warn("slo: save the jobs' request counts", "err", err)
				}
			}
			return nil
		case <-n.poke:
		case f := <-n.reqs:
			f()
		case e := <-n.exits:
			n.exited(loopCtx, e)
		case <-retry.C:
			n.causes = append(n.causes, "retry")
		case <-hold.C:
		case <-collect.C:
			if len(n.phases) > 0 {
				n.collectProfiles()
			}
		case <-prune.C:
			n.prune()
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
		if len(n.causes) == 0 {
			continue
		}
		// A burst of submissions is decided in few runs: Algorithm 1
		// costs O(pending jobs), so the next run waits minDecisionGap or
		// four times as long as the last took, whichever is longer (at
		// most a fifth of a CPU goes to deciding); and arrivals are
		// batched (batching). Meanwhile the loop keeps serving.
		gap := max(minDecisionGap, 4*n.decideTook)
		if wait := max(n.batching(), gap-time.Since(last)); wait > 0 {
			hold.Reset(wait)
			continue
		}
		last = time.Now()
		if again := n.decide(loopCtx); again > 0 {
			retry.Reset(again)
		}
		if len(n.causes) > 0 {
			n.wake() // causes the decision itself added (a failed start)
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
		n.feed.Set(p)
		return
	}
	p := &j
	n.jobs[j.ID] = p
	n.feed.Set(p)
	// Ids sort by creation time; concurrent submissions may land out of
	// order.
	n.order = slices.Insert(n.order, n.orderIndex(j.ID), p)
}

// orderIndex is the index of job id in n.order (sorted by id), or where
// it would go. The caller holds n.mu.
func (n *Node) orderIndex(id string) int {
	i, _ := slices.BinarySearchFunc(n.order, id, func(x *jobs.Job, want string) int { return strings.Compare(x.ID, want) })
	return i
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
