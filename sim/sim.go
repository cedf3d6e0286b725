package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/trace"
)

// Arrival is how a task's requests arrive.
type Arrival int

const (
	// Closed: the next request starts Think after the previous one ends.
	Closed Arrival = iota
	// Poisson: requests arrive at Rate per second and queue.
	Poisson
	// BackToBack: the next request starts when the previous one ends.
	BackToBack
)

// Task is one process of the simulation: it replays its trace's
// iterations, one per request, in turn.
type Task struct {
	Name     string
	Trace    *trace.KernelTrace
	Priority int
	Online   bool
	Arrival  Arrival
	Think    time.Duration
	Rate     float64
	// MPSPercent is the task's MPS share, 1-100 (0: 100).
	MPSPercent int
	// MPSPriority is the task's MPS client priority
	// (CUDA_MPS_CLIENT_PRIORITY): 0 normal, 1 below normal. The MPS GPU
	// model gives SMs to the higher priority first.
	MPSPriority int
	// HostScale multiplies the trace's host time between launch calls.
	// 0 calibrates it (CalibrateHostScale).
	HostScale float64
	// Profile predicts the task's kernels. Nil: built from the trace's
	// own timeline (Experiment profiles each task alone first, as mmk's
	// profiling phase does).
	Profile *kernelsched.TaskProfile
	// Phases change a Poisson task's rate over time (after the last, Rate).
	Phases []RatePhase
	// Keep records every request's end and latency (TaskResult.Requests).
	Keep bool
}

// Config is one simulation.
type Config struct {
	Policy   string
	Tasks    []Task
	Duration time.Duration
	Seed     uint64
	Sched    kernelsched.Config
	GPU      GPUConfig
	// QueueDepth is how many kernels a process may have launched and not
	// finished before its next launch call blocks (CUDA's launch queue).
	// 0 means 1024.
	QueueDepth int
	// DecisionLatency is added to every launch call that goes through the
	// scheduler (every policy but fifo, which has no hook): the round
	// trip from the hook to the scheduler.
	DecisionLatency time.Duration
	// Hold is what the hook does with a launch the scheduler holds
	// (default HoldQueue, mmk's design).
	Hold HoldMode
	// Timeline records the kernels that run between From and To.
	Timeline Window
	// Progress, when set, is called now and then with the simulated time.
	Progress func(done, total time.Duration)
	// SLO runs mmk's latency controller over the tasks (slo.go).
	SLO *SLOConfig
	// stopAfter ends the run when task 0 completed this many requests.
	stopAfter int
	// observe records task 0's kernels per request in Result.runs.
	observe bool
}

// HoldMode is what a held launch does to the process that made it.
type HoldMode string

const (
	// HoldBlock: the launch call blocks until the scheduler releases the
	// kernel, so the process's host work stops too.
	HoldBlock HoldMode = "block"
	// HoldQueue: the hook queues the held launch in stream order and the
	// call returns at once; the process blocks only when its queue of
	// unfinished launches is full (QueueDepth) or when it synchronises.
	// This is mmk's design: a host-bound trainer keeps preparing work
	// while its kernels wait, so it loses GPU time, not CPU time.
	HoldQueue HoldMode = "queue"
)

// Window is a span of simulated time.
type Window struct{ From, To time.Duration }

// Span is one kernel's run on the simulated GPU.
type Span struct {
	Task       int
	Start, End time.Duration
}

// TaskResult is one task's outcome.
type TaskResult struct {
	Name      string
	Requests  int
	P50, P99  time.Duration
	Mean      time.Duration
	PerSecond float64
	Kernels   int
	HostScale float64
	// Each is every request, with Task.Keep.
	Each []Request
}

// Result is a simulation's outcome.
type Result struct {
	Policy  string
	Tasks   []TaskResult
	GPUBusy float64
	// Events is the kernel events simulated (launch calls and completions).
	Events int
	Spans  []Span
	// SLO is what the latency controller did (Config.SLO).
	SLO  *SLOResult
	runs [][]kernelsched.Observation
}

// Simulate runs one simulation. The model:
//
//   - Host: a task's process calls the launch API for each kernel of its
//     iteration in order; between two calls it spends the trace's host
//     time (launch_ts spacing, times HostScale). A call the scheduler
//     holds is queued by the hook and returns (HoldQueue, the default) or
//     blocks the process until released (HoldBlock). At the end of an
//     iteration the process synchronises: the request ends when all its
//     kernels were released and have finished. A request's latency runs
//     from its arrival to that end. Host synchronisations inside an
//     iteration are not modelled.
//   - Scheduler: every launch call is given to a kernelsched.Scheduler
//     running the configured policy, with the task's profile (Task.
//     Profile, or one built from its trace); the scheduler's releases go
//     to the GPU after LaunchLatency, and kernel completions go back to
//     it.
//   - GPU: see GPUModel. Kernels run for their traced duration.
func Simulate(cfg Config) (*Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.result(), nil
}

// sim is one running simulation.
type sim struct {
	cfg    Config
	sched  *kernelsched.Scheduler
	gpu    gpu
	tasks  []*simTask
	ev     eventHeap
	evSeq  uint64
	now    time.Duration
	wakeAt time.Duration
	gpuAt  time.Duration
	gpuVer uint64
	events int
	done   []gpuKernel
	spans  []Span
	hooked bool
	sms    int // the simulated instance's SMs
	runs   [][]kernelsched.Observation
	obs    []kernelsched.Observation
	slo    *sloSim
}

type simTask struct {
	spec  Task
	id    kernelsched.TaskID
	iters [][]kernelRef
	scale float64
	rng   *rand.Rand

	inReq     bool
	reqArrive time.Duration
	// reqStart is when the request in course began its service (the
	// hook measures its service time from its first launch).
	reqStart    time.Duration
	iter, next  int
	allLaunched bool
	outstanding int
	waitSeq     uint64
	waiting     bool // the process is blocked in a held launch call
	held        int  // launches made and not yet released
	blocked     bool
	queued      []time.Duration
	requests    int
	latencies   []time.Duration
	each        []Request
	stopped     bool // suspended before a launch call (SLO)
	kernels     int
	callAt      []time.Duration // launch call time by kernel index (profiling)
}

// durationOf converts nanoseconds, saturating far beyond any simulated
// duration instead of overflowing.
func durationOf(ns float64) time.Duration {
	const limit = float64(math.MaxInt64 / 4)
	return time.Duration(min(ns, limit))
}

// tag names a kernel of a task's trace: its iteration and its index there.
// Launches carry it, so a kernel released after its process moved on to
// another request is still found.
func tag(iter, i int) int { return iter<<32 | i }

func untag(t int) (iter, i int) { return t >> 32, t & (1<<32 - 1) }

// kernel returns the traced kernel a tag names.
func (t *simTask) kernel(tg int) *kernelRef {
	it, i := untag(tg)
	return &t.iters[it][i]
}

// kernelRef is one traced kernel ready to launch.
type kernelRef struct {
	k       *trace.Kernel
	est     kernelsched.Estimate
	hostGap time.Duration
}

func newSim(cfg Config) (*sim, error) {
	if len(cfg.Tasks) == 0 {
		return nil, errors.New("simulate: no task")
	}
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("simulate: duration %v must be positive", cfg.Duration)
	}
	if cfg.QueueDepth == 0 {
		cfg.QueueDepth = 1024
	}
	switch cfg.Hold {
	case "":
		cfg.Hold = HoldQueue
	case HoldBlock, HoldQueue:
	default:
		return nil, fmt.Errorf("simulate: hold mode %q is not one of %s, %s", cfg.Hold, HoldBlock, HoldQueue)
	}
	if cfg.QueueDepth < 1 || cfg.DecisionLatency < 0 {
		return nil, fmt.Errorf("simulate: queue depth %d must be positive and decision latency %v not negative", cfg.QueueDepth, cfg.DecisionLatency)
	}
	if err := cfg.GPU.validate(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	sched, err := kernelsched.New(cfg.Policy, cfg.Sched)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s := &sim{cfg: cfg, sched: sched, wakeAt: kernelsched.Never, gpuAt: kernelsched.Never, hooked: cfg.Policy != "fifo"}
	sms := cfg.GPU.SMs
	if sms == 0 {
		sms = sched.Config().SMs
	}
	s.sms = sms
	switch cfg.GPU.Model {
	case MPS:
		prio := make([]int, len(cfg.Tasks))
		for i, t := range cfg.Tasks {
			prio[i] = t.MPSPriority
		}
		s.gpu = newMPSGPU(sms, prio, cfg.GPU.BlockResidency, cfg.GPU.DispatchWait)
	default:
		s.gpu = newTimeSliced(cfg.GPU, len(cfg.Tasks))
	}
	for i, ts := range cfg.Tasks {
		t, err := s.addTask(i, ts)
		if err != nil {
			return nil, fmt.Errorf("simulate: task %q: %w", ts.Name, err)
		}
		s.tasks = append(s.tasks, t)
	}
	if s.slo, err = newSLO(cfg.SLO, cfg.Policy, cfg.Tasks); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	return s, nil
}

func (s *sim) addTask(i int, ts Task) (*simTask, error) {
	if ts.Trace == nil || len(ts.Trace.Iterations) == 0 {
		return nil, errors.New("no trace")
	}
	switch {
	case ts.Arrival == Poisson && !(ts.Rate > 0 && ts.Rate <= 1e6):
		return nil, fmt.Errorf("rate: %v requests/s is not in (0, 1e6]", ts.Rate)
	case ts.Think < 0:
		return nil, fmt.Errorf("think: %v is negative", ts.Think)
	case ts.MPSPriority != 0 && ts.MPSPriority != 1:
		return nil, fmt.Errorf("MPS priority: %d is not 0 (normal) or 1 (below normal)", ts.MPSPriority)
	case ts.HostScale < 0 || math.IsNaN(ts.HostScale) || ts.HostScale > 100:
		return nil, fmt.Errorf("host scale: %v is outside 0..100", ts.HostScale)
	}
	if err := validPhases(ts.Phases); err != nil {
		return nil, err
	}
	prof := ts.Profile
	if prof == nil {
		var err error
		if prof, err = ts.Trace.Profile(ts.Trace.Name); err != nil {
			return nil, err
		}
	}
	id, err := s.sched.AddTask(kernelsched.TaskSpec{Name: ts.Name, Key: ts.Trace.Name, Priority: ts.Priority, Online: ts.Online, MPSPercent: ts.MPSPercent, Profile: prof})
	if err != nil {
		return nil, err
	}
	scale := ts.HostScale
	if scale == 0 {
		scale = 1
	}
	t := &simTask{spec: ts, id: id, scale: scale, rng: rand.New(rand.NewPCG(s.cfg.Seed, uint64(i)+1))}
	for _, it := range ts.Trace.Iterations {
		refs := make([]kernelRef, len(it))
		for j := range it {
			refs[j] = kernelRef{k: &it[j], est: prof.Estimate(it[j].ID)}
			if j > 0 {
				refs[j].hostGap = durationOf(float64(max(0, it[j].Launch-it[j-1].Launch)) * scale)
			}
		}
		t.iters = append(t.iters, refs)
	}
	return t, nil
}

func (s *sim) run() error {
	for i, t := range s.tasks {
		switch t.spec.Arrival {
		case Closed:
			var off time.Duration
			if t.spec.Think > 0 {
				off = time.Duration(t.rng.Int64N(int64(t.spec.Think)))
			}
			s.push(off, evStart, i)
		case BackToBack:
			s.push(0, evStart, i)
		case Poisson:
			s.push(s.exp(t), evArrive, i)
		}
	}
	if s.slo != nil {
		s.push(0, evSLO, -1)
	}
	total := s.cfg.Duration
	nextProgress := time.Duration(0)
	for s.ev.Len() > 0 {
		e := s.ev.pop()
		if e.at > total {
			break
		}
		s.now = e.at
		if err := s.handle(e); err != nil {
			return err
		}
		if s.cfg.stopAfter > 0 && s.tasks[0].requests >= s.cfg.stopAfter {
			break
		}
		if s.cfg.Progress != nil && s.now >= nextProgress {
			s.cfg.Progress(s.now, total)
			nextProgress = s.now + total/20
		}
	}
	if s.now < total && s.cfg.stopAfter == 0 {
		s.now = total
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress(total, total)
	}
	return nil
}

func (s *sim) exp(t *simTask) time.Duration {
	return durationOf(t.rng.ExpFloat64() / t.rateAt(s.now) * 1e9)
}

func (s *sim) handle(e event) error {
	t := s.task(e.task)
	switch e.kind {
	case evStart:
		s.startRequest(t, s.now)
	case evArrive:
		if t.inReq {
			t.queued = append(t.queued, s.now)
		} else {
			s.startRequest(t, s.now)
		}
		s.push(s.now+s.exp(t), evArrive, e.task)
	case evCall:
		return s.call(t)
	case evSubmit:
		s.gpu.submit(s.now, e.k)
		s.syncGPU()
	case evGPU:
		if e.ver != s.gpuVer {
			return nil
		}
		s.gpuAt = kernelsched.Never
		return s.complete()
	case evWake:
		if e.at != s.wakeAt {
			return nil
		}
		s.wakeAt = kernelsched.Never
		return s.schedule()
	case evSLO:
		return s.sloStep()
	}
	return nil
}

func (s *sim) task(i int) *simTask {
	if i < 0 {
		return nil
	}
	return s.tasks[i]
}

func (s *sim) startRequest(t *simTask, arrived time.Duration) {
	t.inReq, t.reqArrive, t.reqStart = true, arrived, s.now
	t.iter = t.requests % len(t.iters)
	t.next, t.allLaunched = 0, false
	s.push(s.now, evCall, int(t.id))
}

// call is the process calling the launch API for its next kernel.
func (s *sim) call(t *simTask) error {
	if s.slo != nil && s.slo.suspended && !t.spec.Online {
		t.stopped = true
		return nil
	}
	if t.outstanding+t.held >= s.cfg.QueueDepth {
		t.blocked = true
		return nil
	}
	r := &t.iters[t.iter][t.next]
	seq, err := s.sched.Arrive(s.now, kernelsched.Launch{
		Task: t.id, Kernel: r.k.ID, Regs: r.k.Regs, SharedMem: r.k.SharedMem, Est: r.est, Tag: tag(t.iter, t.next),
	})
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	s.events++
	t.waitSeq, t.waiting = seq, true
	t.held++
	if s.cfg.observe {
		if len(t.callAt) <= t.next {
			t.callAt = append(t.callAt, make([]time.Duration, t.next+1-len(t.callAt))...)
		}
		t.callAt[t.next] = s.now
	}
	if err := s.schedule(); err != nil {
		return err
	}
	if t.waiting && s.cfg.Hold == HoldQueue {
		// The hook queued the launch: the call returns after the round
		// trip to the scheduler.
		s.advanceHost(t, s.now+s.cfg.DecisionLatency)
	}
	return nil
}

// advanceHost lets a process whose launch call returned at `at` go on to
// its next launch call, or to its end-of-iteration synchronisation.
func (s *sim) advanceHost(t *simTask, at time.Duration) {
	t.waiting = false
	if t.next+1 < len(t.iters[t.iter]) {
		t.next++
		s.push(at+t.iters[t.iter][t.next].hostGap, evCall, int(t.id))
	} else {
		t.allLaunched = true
	}
}

// schedule asks the scheduler and sends what it releases to the GPU.
func (s *sim) schedule() error {
	rel, wake := s.sched.Schedule(s.now)
	for i := range rel {
		l := &rel[i]
		t := s.tasks[l.Task]
		r := t.kernel(l.Tag)
		k := gpuKernel{task: int(l.Task), tag: l.Tag, seq: l.Seq, dur: r.k.Dur, sms: l.SMs, waves: waves(l, l.SMs)}
		if s.cfg.GPU.ShareStretch && s.cfg.GPU.Model == MPS {
			if full := waves(l, s.sms); k.waves > full {
				k.dur = durationOf(float64(k.dur) * float64(k.waves) / float64(full))
			}
		}
		if m := s.maskSMs(t); m > 0 && m < k.sms {
			// A TPC mask holds the kernel to fewer SMs than its share:
			// more waves of blocks, whatever the GPU model (a grid sized
			// to every SM runs a partial last wave: on an H100 six TPCs
			// masked cost a vgg19 trainer 19 %).
			w := waves(l, m)
			k.dur = durationOf(float64(k.dur) * float64(w) / float64(k.waves))
			k.sms, k.waves = m, w
		}
		t.outstanding++
		t.held--
		if lat := s.cfg.GPU.LaunchLatency; lat > 0 {
			s.pushKernel(s.now+lat, k)
		} else {
			s.gpu.submit(s.now, k)
		}
		if !t.waiting || l.Seq != t.waitSeq {
			continue
		}
		// The launch call returns: the process goes on to its next one.
		at := s.now
		if s.hooked {
			at += s.cfg.DecisionLatency
		}
		s.advanceHost(t, at)
	}
	s.syncGPU()
	if wake != kernelsched.Never && wake != s.wakeAt && wake > s.now {
		s.wakeAt = wake
		s.push(wake, evWake, -1)
	}
	return nil
}

// waves is how many waves of blocks launch l runs on sms SMs: its grid
// over the blocks they hold at once.
func waves(l *kernelsched.Launch, sms int) int {
	perWave := uint64(max(1, l.BlocksPerSM)) * uint64(max(1, sms))
	return int(min((l.Kernel.Grid.Count()+perWave-1)/perWave, math.MaxInt32))
}

// syncGPU keeps one pending event for the GPU's next completion.
func (s *sim) syncGPU() {
	if d := s.gpu.due(); d != s.gpuAt {
		s.gpuAt = d
		s.gpuVer++
		if d != kernelsched.Never {
			s.ev.push(event{at: d, seq: s.nextSeq(), kind: evGPU, task: -1, ver: s.gpuVer})
		}
	}
}

func (s *sim) complete() error {
	s.done = s.gpu.fire(s.now, s.done[:0])
	for _, k := range s.done {
		if err := s.sched.Complete(s.now, kernelsched.TaskID(k.task), k.seq); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		s.events++
		t := s.tasks[k.task]
		t.outstanding--
		t.kernels++
		if w := s.cfg.Timeline; w.To > w.From && s.now > w.From && k.start < w.To {
			s.spans = append(s.spans, Span{Task: k.task, Start: k.start, End: s.now})
		}
		if s.cfg.observe && k.task == 0 {
			r := t.kernel(k.tag).k
			_, i := untag(k.tag)
			s.obs = append(s.obs, kernelsched.Observation{ID: r.ID, Regs: r.Regs, SharedMem: r.SharedMem, Start: k.start, End: s.now, Launch: t.callAt[i]})
		}
		if t.blocked && t.outstanding+t.held < s.cfg.QueueDepth {
			t.blocked = false
			s.push(s.now, evCall, k.task)
		}
		if t.inReq && t.allLaunched && t.held == 0 && t.outstanding == 0 {
			if err := s.finishRequest(t); err != nil {
				return err
			}
		}
	}
	return s.schedule()
}

// finishRequest ends a request: its last kernel completed, which is when
// the job's synchronisation returns (the hook reports it; here the
// scheduler is told directly).
func (s *sim) finishRequest(t *simTask) error {
	if err := s.sched.Synced(s.now, kernelsched.TaskID(t.id)); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if s.cfg.observe && t.id == 0 {
		s.runs = append(s.runs, s.obs)
		s.obs = nil
	}
	lat := s.now - t.reqArrive
	t.latencies = append(t.latencies, lat)
	if t.spec.Keep {
		t.each = append(t.each, Request{End: s.now, Latency: lat})
	}
	s.sloRequest(t, s.now-t.reqStart, lat)
	t.requests++
	t.inReq = false
	switch t.spec.Arrival {
	case Closed:
		s.push(s.now+t.spec.Think, evStart, int(t.id))
	case BackToBack:
		s.startRequest(t, s.now)
	case Poisson:
		if len(t.queued) > 0 {
			a := t.queued[0]
			t.queued = t.queued[1:]
			s.startRequest(t, a)
		}
	}
	return nil
}

func (s *sim) result() *Result {
	res := &Result{Policy: s.cfg.Policy, Events: s.events, Spans: s.spans, runs: s.runs, SLO: s.sloResult()}
	span := s.now
	if span > 0 {
		res.GPUBusy = float64(s.gpu.busy(span)) / float64(span)
	}
	for _, t := range s.tasks {
		tr := TaskResult{Name: t.spec.Name, Requests: t.requests, Kernels: t.kernels, HostScale: t.scale, Each: t.each}
		if span > 0 {
			tr.PerSecond = float64(t.requests) / span.Seconds()
		}
		if n := len(t.latencies); n > 0 {
			lat := slices.Clone(t.latencies)
			slices.Sort(lat)
			tr.P50, tr.P99 = Percentile(lat, 50), Percentile(lat, 99)
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			tr.Mean = sum / time.Duration(n)
		}
		res.Tasks = append(res.Tasks, tr)
	}
	return res
}

// Percentile is the nearest-rank percentile p (0-100] of sorted values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
