package kernelsched

import (
	"fmt"
	"math"
	"time"
)

// Never is the wake-up time that means no timer is needed.
const Never = time.Duration(math.MaxInt64)

// Scheduler holds the launches of the tasks sharing one GPU instance and
// releases them as its policy decides. It is not safe for concurrent use:
// the daemon serialises calls, the simulator is single-threaded.
type Scheduler struct {
	cfg    Config
	policy Policy
	tasks  []*Task
	// queues[p] holds the tasks of priority p that have held launches, in
	// the order they started waiting.
	queues [NumPriorities][]*Task

	seq     uint64
	nout    int // released kernels not completed, all tasks
	buf     []Launch
	used    usage         // demand of all released, unfinished kernels
	predEnd time.Duration // predicted end of all released work, run one after another
	lastNow time.Duration
	// topPriority is the highest priority registered (NumPriorities: none);
	// live the number of tasks registered and not removed.
	topPriority, live int
}

// usage is the resources released kernels hold.
type usage struct {
	sms  int
	smem int64
	bw   float64
}

// New returns a scheduler running the named policy (see Policies).
func New(policy string, cfg Config) (*Scheduler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("kernel scheduler config: %w", err)
	}
	p, err := NewPolicy(policy)
	if err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, policy: p, topPriority: NumPriorities}, nil
}

// Config is the scheduler's configuration with defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// Policy is the scheduler's policy.
func (s *Scheduler) Policy() Policy { return s.policy }

// AddTask registers a task. It takes the lowest id a removed task left
// free, so that tasks that come and go (processes that reconnect) leave
// nothing for each decision to walk.
func (s *Scheduler) AddTask(spec TaskSpec) (TaskID, error) {
	if err := spec.validate(); err != nil {
		return 0, err
	}
	if spec.MPSPercent == 0 {
		spec.MPSPercent = 100
	}
	id := TaskID(len(s.tasks))
	for i, old := range s.tasks {
		if old.removed {
			id = TaskID(i)
			break
		}
	}
	t := &Task{ID: id, Spec: spec, weight: spec.Weight}
	if t.weight == 0 {
		t.weight = NumPriorities - spec.Priority
	}
	t.smCap = max(1, s.cfg.SMs*spec.MPSPercent/100)
	if int(id) < len(s.tasks) {
		s.tasks[id] = t
	} else {
		s.tasks = append(s.tasks, t)
	}
	s.updateTop()
	s.policy.TaskAdded(s, t)
	return t.ID, nil
}

// RemoveTask unregisters a task (its process ended). Its held launches
// are dropped and its released kernels stop counting.
func (s *Scheduler) RemoveTask(id TaskID) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	if t.Pending() > 0 {
		s.dequeue(t)
	}
	for _, r := range t.out {
		s.used.sms -= r.sms
		s.used.smem -= r.smem
		s.used.bw -= r.bw
	}
	s.nout -= len(t.out)
	t.pending, t.head, t.out, t.removed = nil, 0, nil, true
	s.updateTop()
	s.policy.TaskRemoved(s, t)
	return nil
}

// Tasks are the task slots by id: the registered tasks, and removed
// ones (marked) whose id no task has taken since.
func (s *Scheduler) Tasks() []*Task { return s.tasks }

// Task returns one task.
func (s *Scheduler) Task(id TaskID) (*Task, error) { return s.task(id) }

func (s *Scheduler) task(id TaskID) (*Task, error) {
	if id < 0 || int(id) >= len(s.tasks) || s.tasks[id].removed {
		return nil, fmt.Errorf("kernel scheduler: no task %d", id)
	}
	return s.tasks[id], nil
}

// SetProfile gives a task the profile its profiling phase has just
// written; launches that arrive later are predicted from it.
func (s *Scheduler) SetProfile(id TaskID, p *TaskProfile) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	t.Spec.Profile = p
	return nil
}

// Arrive holds a launch of a task. It returns the launch's sequence
// number, which Complete takes back.
func (s *Scheduler) Arrive(now time.Duration, l Launch) (uint64, error) {
	t, err := s.admit(now, &l)
	if err != nil {
		return 0, err
	}
	if t.Pending() == 0 {
		s.queues[t.Spec.Priority] = append(s.queues[t.Spec.Priority], t)
	}
	t.pending = append(t.pending, l)
	s.policy.Arrived(s, t, &t.pending[len(t.pending)-1], now)
	return l.Seq, nil
}

// Went books a launch that the launch path let go without waiting for a
// decision: the hook failed open (its wait timed out, or it stopped
// waiting after a timeout until the server caught up). The kernel is on
// its way to the GPU, so it is released at once, without the policy, and
// counts like any released kernel until Complete. Holding it instead
// would queue work that already ran and delay every later launch of the
// task behind it. It returns the sequence number Complete takes back.
func (s *Scheduler) Went(now time.Duration, l Launch) (uint64, error) {
	t, err := s.admit(now, &l)
	if err != nil {
		return 0, err
	}
	s.book(t, l, now)
	return l.Seq, nil
}

// admit checks a new launch of a task, numbers it and updates the task's
// predictions: a launch ends the task's gap.
func (s *Scheduler) admit(now time.Duration, l *Launch) (*Task, error) {
	t, err := s.task(l.Task)
	if err != nil {
		return nil, err
	}
	occ, err := s.cfg.Limits.Occupancy(Shape{Grid: l.Kernel.Grid, Block: l.Kernel.Block, Regs: l.Regs, SharedMem: l.SharedMem}, t.smCap)
	if err != nil {
		return nil, fmt.Errorf("task %q launch of %s: %w", t.Spec.Name, l.Kernel.Name, err)
	}
	s.observe(now)
	if !t.Active(now) {
		t.position = 0 // a new run begins
	}
	if !t.inRun {
		t.inRun, t.runStart = true, now
	}
	s.seq++
	l.Seq, l.Arrived, l.SMs, l.SharedMemTotal, l.BlocksPerSM = s.seq, now, occ.SMs, occ.SharedMem, occ.BlocksPerSM
	t.callUntil = now + l.Est.NextLaunch
	t.windowEnd = now // real-time feedback: the task's gap is over
	return t, nil
}

// Complete reports that a released kernel finished on the GPU.
func (s *Scheduler) Complete(now time.Duration, id TaskID, seq uint64) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	i := 0
	for i < len(t.out) && t.out[i].seq != seq {
		i++
	}
	if i == len(t.out) {
		return fmt.Errorf("kernel scheduler: task %q has no released kernel %d", t.Spec.Name, seq)
	}
	s.observe(now)
	r := t.out[i]
	t.out = append(t.out[:i], t.out[i+1:]...)
	s.nout--
	s.used.sms -= r.sms
	s.used.smem -= r.smem
	s.used.bw -= r.bw
	if len(t.out) == 0 {
		// The real end refines the prediction of the gap after it.
		if t.Pending() == 0 {
			t.gapUntil = now + r.est.Hold
			t.windowEnd = now
			if r.est.Known && r.est.SG >= s.cfg.Epsilon {
				t.windowEnd = now + r.est.SG
			}
		}
	}
	if s.nout == 0 {
		s.predEnd = now
	}
	s.policy.Completed(s, t, seq, now)
	return nil
}

// Synced reports that a synchronisation of the task returned at now: every
// kernel it had released has finished, and its run (an online job's
// request) is over.
func (s *Scheduler) Synced(now time.Duration, id TaskID) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	for len(t.out) > 0 {
		if err := s.Complete(now, id, t.out[0].seq); err != nil {
			return err
		}
	}
	s.observe(now)
	t.inRun = false
	s.policy.Synced(s, t, now)
	return nil
}

// SetPolicy switches to the named policy with cfg's policy parameters (the
// instance's SMs, limits and bandwidth stay). Held launches stay held; the
// new policy decides them from the next Schedule on, with none of the old
// one's state. Switching a policy that can be retuned live (guard) to
// itself keeps what it learnt (think times, probes) and takes the new
// parameters.
func (s *Scheduler) SetPolicy(name string, cfg Config) error {
	cfg.SMs, cfg.Limits, cfg.BandwidthGBs = s.cfg.SMs, s.cfg.Limits, s.cfg.BandwidthGBs
	cfg, err := cfg.withDefaults()
	if err != nil {
		return fmt.Errorf("kernel scheduler config: %w", err)
	}
	if r, ok := s.policy.(retuner); ok && s.policy.Name() == name {
		s.cfg = cfg
		r.retune(cfg)
		return nil
	}
	p, err := NewPolicy(name)
	if err != nil {
		return err
	}
	s.cfg, s.policy = cfg, p
	for _, t := range s.tasks {
		p.TaskAdded(s, t)
		if t.removed {
			p.TaskRemoved(s, t)
		}
	}
	return nil
}

// retuner is a policy that takes new parameters without losing its state.
type retuner interface {
	retune(cfg Config)
}

// Schedule asks the policy what to release now. It returns the released
// launches (valid until the next call) and the time at which it wants to
// be asked again even if nothing arrives or completes (Never: no timer).
func (s *Scheduler) Schedule(now time.Duration) ([]Launch, time.Duration) {
	s.observe(now)
	clear(s.buf)
	s.buf = s.buf[:0]
	wake := s.policy.Schedule(s, now)
	if wake <= now {
		wake = Never
	}
	return s.buf, wake
}

// observe keeps time monotonic for the policies.
func (s *Scheduler) observe(now time.Duration) {
	if now > s.lastNow {
		s.lastNow = now
	}
}

// Release sends the head launch of t to the GPU now. Policies call it.
func (s *Scheduler) Release(t *Task, now time.Duration) Launch {
	l := t.popHead()
	if t.Pending() == 0 {
		s.dequeue(t)
	}
	s.book(t, l, now)
	s.buf = append(s.buf, l)
	return l
}

// book counts a launch that goes to the GPU now as released.
func (s *Scheduler) book(t *Task, l Launch, now time.Duration) {
	start := max(now, s.predEnd)
	end := start + l.Est.SK
	s.predEnd = end
	t.lastEnd = end
	t.gapUntil = end + l.Est.Hold
	t.windowEnd = end
	if l.Est.Known && l.Est.SG >= s.cfg.Epsilon {
		t.windowEnd = end + l.Est.SG
	}
	r := released{seq: l.Seq, sms: l.SMs, smem: l.SharedMemTotal, bw: l.BandwidthGBs, est: l.Est}
	t.out = append(t.out, r)
	s.nout++
	t.position++
	s.used.sms += r.sms
	s.used.smem += r.smem
	s.used.bw += r.bw
}

func (s *Scheduler) dequeue(t *Task) {
	q := s.queues[t.Spec.Priority]
	for i, x := range q {
		if x == t {
			s.queues[t.Spec.Priority] = append(q[:i], q[i+1:]...)
			return
		}
	}
}

// Fits is the contention check: whether launch l of task t fits, in SMs,
// shared memory and bandwidth, what the released, unfinished kernels of
// the other tasks leave free. The task's own kernels do not count: its
// stream runs them one after another.
func (s *Scheduler) Fits(t *Task, l *Launch) bool {
	u := s.used
	for _, r := range t.out {
		u.sms -= r.sms
		u.smem -= r.smem
		u.bw -= r.bw
	}
	if u.sms+l.SMs > s.cfg.SMs {
		return false
	}
	if u.smem+l.SharedMemTotal > int64(s.cfg.SMs)*int64(s.cfg.Limits.SharedMemPerSM) {
		return false
	}
	if s.cfg.BandwidthGBs > 0 && l.BandwidthGBs > 0 && u.bw+l.BandwidthGBs > s.cfg.BandwidthGBs {
		return false
	}
	return true
}

// Preemptible reports whether a higher-priority task is registered, so
// that t must keep its released kernels within Config.Inflight.
func (s *Scheduler) Preemptible(t *Task) bool { return s.topPriority < t.Spec.Priority }

// updateTop recomputes the highest registered priority and the number of
// registered tasks.
func (s *Scheduler) updateTop() {
	s.topPriority, s.live = NumPriorities, 0
	for _, t := range s.tasks {
		if !t.removed {
			s.topPriority = min(s.topPriority, t.Spec.Priority)
			s.live++
		}
	}
}

// CanRelease reports whether t has a held launch and, when limited, room
// under the in-flight bounds (Config.Inflight, Config.InflightWork).
func (s *Scheduler) CanRelease(t *Task, limited bool) bool {
	if t.Pending() == 0 {
		return false
	}
	if !limited || len(t.out) == 0 {
		return true
	}
	if len(t.out) >= s.cfg.Inflight {
		return false
	}
	work := t.pending[t.head].Est.SK
	for _, r := range t.out {
		work += r.est.SK
	}
	return work <= s.cfg.InflightWork
}

// TopActive is the highest priority with an active task (busy or within
// its predicted gap), or -1.
func (s *Scheduler) TopActive(now time.Duration) int {
	top := -1
	for _, t := range s.tasks {
		if !t.removed && t.Active(now) && (top < 0 || t.Spec.Priority < top) {
			top = t.Spec.Priority
		}
	}
	return top
}
