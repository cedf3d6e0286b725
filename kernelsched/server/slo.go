package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
)

// SLOConfig turns on the latency controller of a server (Config.SLO): the
// online tasks' requests are measured against their targets and a
// slo.Controller picks, rung by rung, the restraint on the offline tasks
// that holds them (docs/slo.md).
type SLOConfig struct {
	// Controller tunes the controller and names its ladder.
	Controller slo.Config
	// Targets are online tasks' targets by task name, for tasks whose
	// Identity names none (mmkctl kernelsched serve --slo NAME=TARGET);
	// Default the target of an online task nothing names (zero: measured
	// and shown only).
	Targets map[string]slo.Target
	Default slo.Target
	// Suspend stops (stop) or resumes the processes of offline tasks,
	// for the reason why says (its owner notes it on the jobs it stops);
	// a ladder with a suspending rung needs it.
	Suspend func(pids []int, stop bool, why SuspendCause) error
	// OnDecision hears every change of rung, after it was applied, and
	// logs it (nil: the server logs it).
	OnDecision func(SLODecision)
	// Off starts the controller inactive (SetSLOActive turns it on).
	Off bool
	// StopBound bounds each offline task's suspension (zero:
	// slo.DefaultStopBound).
	StopBound slo.StopBound
}

// SuspendCause is why the controller stops offline tasks: the services
// whose targets it holds (each with its job and standing in numbers)
// and the reason of the decision that took the suspending rung.
type SuspendCause struct {
	Services []ServiceView
	Reason   string
}

// SLODecision is a change of rung as the server applied it.
type SLODecision struct {
	slo.Decision
	// Wall is when it was taken.
	Wall time.Time `json:"wall"`
	// Services are the online tasks then; Offline the offline tasks the
	// rung applies to.
	Services []ServiceView `json:"services"`
	Offline  []TaskRef     `json:"offline"`
	// Err says what could not be applied ("" : all of it).
	Err string `json:"error,omitempty"`
}

// TaskRef names a task: its process, name and the job the server's
// owner knows it by (Identity.Job); User is its process's uid (-1:
// unknown), Others whether its target may restrain other users' tasks
// beyond guard (Identity.RestrainOthers).
type TaskRef struct {
	PID    int    `json:"pid"`
	Name   string `json:"name"`
	Job    string `json:"job,omitempty"`
	User   int    `json:"-"`
	Others bool   `json:"-"`
}

// ServiceView is an online task against its target.
type ServiceView struct {
	TaskRef
	slo.ServiceStatus
}

// SLOView is the controller's state for views: its ladder and rung, the
// services, the offline tasks it restrains and its last decisions.
type SLOView struct {
	Active    bool          `json:"active"`
	Ladder    []string      `json:"ladder"`
	Level     int           `json:"level"`
	Rung      string        `json:"rung"`
	Probing   bool          `json:"probing"`
	Services  []ServiceView `json:"services"`
	Offline   []TaskRef     `json:"offline"`
	Suspended []int         `json:"suspended,omitempty"`
	// Unstopped are the offline tasks (pids) the rung would stop that run
	// for their progress floor (SLOConfig.StopBound).
	Unstopped []int `json:"unstopped,omitempty"`
	// Unseen are the offline jobs placed here (SetPlacedOffline) of
	// which no task is connected: the controller cannot restrain them.
	Unseen []string `json:"unseen,omitempty"`
	// Shielded are the offline tasks (pids) of other users than the
	// services', which their targets may not mask or suspend
	// (Identity.RestrainOthers): only priority and guard reach them.
	Shielded []int `json:"shielded,omitempty"`
	// TPCKeep is the TPCs the rung's mask asks the offline tasks it
	// masks to keep (0: no mask), by the TPC map where the server has
	// one; without a map, the mask's first slots kept, holes included.
	TPCKeep   int           `json:"tpcKeep,omitempty"`
	Decisions []SLODecision `json:"decisions"`
	// TPCStates is what each offline task's hook said of TPC masks
	// (by pid; TPCReady, TPCMasking, TPCNone), while a rung masks.
	TPCStates map[int]uint32 `json:"tpcStates,omitempty"`
	Policy    string         `json:"policy"`
	// Since is when the controller was last turned on; Window how far
	// back it judges; Aim the share of each target's budget it aims for.
	Since  time.Time     `json:"since"`
	Window time.Duration `json:"window"`
	Aim    float64       `json:"aim"`
	// History is each service's points over time, by pid (SLO(true)).
	History map[int][]Point `json:"-"`
}

// Point is a service's history point with its wall time.
type Point struct {
	Time time.Time `json:"time"`
	slo.Point
}

// maxDecisions is how many decisions the view keeps.
const maxDecisions = 64

// sloSample is a request the loop measured, for the controller.
type sloSample struct {
	id    string
	s     slo.Sample
	alone bool
}

// sloTask is a task coming (add) or going (!add), for the controller;
// rejoin: a task of a job (or process) that left within sloRejoin, by
// the id it had.
type sloTask struct {
	id     string
	add    bool
	rejoin bool
	online bool
	ref    TaskRef
	target slo.Target
	named  bool // the target came from an Identity
}

// sloRejoin is how long the controller keeps what it knows of a task
// that went (a service's verdicts and requests, what each rung held
// beside an offline one) for a task of the same job, or process, that
// connects again: a hook that reconnects (after a flood, say) is not a
// new service, re-armed at the start rung with its verdicts wiped
// (issue 54: an always-late service reconnecting every 10 s got 14 %
// suspend instead of 0.6 %).
const sloRejoin = time.Minute

// sloLeft is the controller id of a task that went, and when.
type sloLeft struct {
	id string
	at time.Duration
}

// sloKey is the job, else the process, a task is of, to the controller.
func sloKey(t *task) string {
	if t.job != "" {
		return "job " + t.job
	}
	return "pid " + strconv.Itoa(t.hello.PID)
}

// sloState is the controller's side of the server: the loop hands it
// tasks and samples (in), the controller goroutine owns the rest (mu
// guards it against views).
type sloState struct {
	cfg SLOConfig

	inMu    sync.Mutex
	tasks   []sloTask
	samples []sloSample

	// applyMu orders the rung's applications (applyRung).
	applyMu sync.Mutex
	// applyErr and applyErrAt: the last failure to apply the rung in
	// force that was logged, and when (the step's clock): one that stays
	// is logged again at most every applyErrEvery, not at every step.
	applyErr   string
	applyErrAt time.Duration

	mu        sync.Mutex
	ctrl      *slo.Controller
	active    bool
	since     time.Duration
	services  map[string]TaskRef
	offline   map[string]TaskRef
	suspended []int
	unstopped []int
	stops     *slo.StopLedger
	tpcKeep   int
	// policy is the guard setting the controller applied ("" : the
	// server's own policy, untouched).
	policy    string
	decisions []SLODecision
	named     map[string]bool // services whose target an Identity gave
	// leaving are the tasks that went, kept sloRejoin for a task of the
	// same job.
	leaving map[string]leftTask
	// placed are the offline jobs the owner placed on the instance
	// (SetPlacedOffline, under placedMu); unseen those of them no task
	// of which is connected (at the last step).
	placedMu sync.Mutex
	placed   []string
	unseen   []string
	// shielded are the offline tasks no service may mask or suspend
	// (shieldedLocked), at the last step.
	shielded []int
}

// leftTask is a task that went: when, and the service or offline task
// it was to the controller.
type leftTask struct {
	at      time.Duration
	service *slo.Detached
	offline *TaskRef
}

// shieldedLocked are the offline tasks (pids) that no present service
// may mask or suspend: of another user than every service's, where no
// service's target may restrain other users' (TaskRef.Others). The
// caller holds mu.
func (st *sloState) shieldedLocked() []int {
	// The present services' reach: every user's, or their own users'.
	all, users := false, map[int]bool{}
	for _, id := range st.ctrl.Services() {
		if sv, ok := st.services[id]; ok {
			all = all || sv.Others
			users[sv.User] = true
		}
	}
	var out []int
	for _, off := range st.offline {
		if !all && !(off.User >= 0 && users[off.User]) {
			out = append(out, off.PID)
		}
	}
	slices.Sort(out)
	return out
}

// unseenLocked are the offline jobs its owner placed on the instance
// (SetPlacedOffline) of which no task is connected; the caller holds mu.
func (st *sloState) unseenLocked() []string {
	st.placedMu.Lock()
	placed := st.placed
	st.placedMu.Unlock()
	connected := map[string]bool{}
	for _, r := range st.offline {
		connected[r.Job] = true
	}
	var out []string
	for _, job := range placed {
		if !connected[job] {
			out = append(out, job)
		}
	}
	return out
}

// SetPlacedOffline tells the server which offline jobs its owner placed
// on the instance (mmkd's job ids), connected or not. One whose hook
// never connected (it unset CUDA_INJECTION64_PATH, say) runs unseen: the
// controller cannot restrain it, takes no request as measured alone
// beside it, and lists it Unrestrainable (issue 54: such a job ran while
// the service's requests counted as alone).
func (s *Server) SetPlacedOffline(jobs []string) {
	if s.slo == nil {
		return
	}
	s.slo.placedMu.Lock()
	s.slo.placed = slices.Clone(jobs)
	s.slo.placedMu.Unlock()
}

// knows reports whether a task that went is still kept (sloRejoin).
func (st *sloState) knows(id string) bool {
	_, ok := st.leaving[id]
	return ok
}

// newSLO checks the configuration.
func newSLO(cfg *SLOConfig) (*sloState, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	ctrl, err := slo.New(c.Controller)
	if err != nil {
		return nil, err
	}
	for _, r := range ctrl.Config().Ladder {
		if r.Suspend && c.Suspend == nil {
			return nil, errors.New("slo: the ladder suspends offline jobs, and nothing was given to suspend them with")
		}
	}
	if c.StopBound == (slo.StopBound{}) {
		c.StopBound = slo.DefaultStopBound
	}
	if err := c.StopBound.Check(); err != nil {
		return nil, fmt.Errorf("slo: stop bound: %w", err)
	}
	return &sloState{cfg: c, ctrl: ctrl, active: !c.Off, services: map[string]TaskRef{}, offline: map[string]TaskRef{},
		named: map[string]bool{}, stops: slo.NewStopLedger(c.StopBound), leaving: map[string]leftTask{}}, nil
}

// sloTaskAdded tells the controller of a registered task (loop).
func (s *Server) sloTaskAdded(t *task) {
	if s.slo == nil {
		return
	}
	now := mono()
	for k, l := range s.sloLeft {
		if now-l.at > sloRejoin {
			delete(s.sloLeft, k)
		}
	}
	rejoin := false
	if l, ok := s.sloLeft[sloKey(t)]; ok && strings.HasPrefix(l.id, cmp.Or(t.hello.Name, "task")+"#") {
		t.sloID, rejoin = l.id, true
		delete(s.sloLeft, sloKey(t))
	} else {
		s.sloSeq++
		// Named as its job or task is (the controller's reasons and the
		// jobs' events say it), numbered: a name may come again.
		t.sloID = cmp.Or(t.hello.Name, "task") + "#" + strconv.FormatUint(s.sloSeq, 10)
	}
	st := sloTask{id: t.sloID, add: true, rejoin: rejoin, online: t.hello.Online,
		ref: TaskRef{PID: t.hello.PID, Name: t.hello.Name, Job: t.job, User: t.user, Others: t.others}}
	if t.target != nil {
		st.target, st.named = *t.target, true
	}
	s.slo.inMu.Lock()
	s.slo.tasks = append(s.slo.tasks, st)
	s.slo.inMu.Unlock()
}

// sloTaskRemoved tells the controller a task went (loop).
func (s *Server) sloTaskRemoved(t *task) {
	if s.slo == nil || t.sloID == "" {
		return
	}
	if s.sloLeft == nil {
		s.sloLeft = map[string]sloLeft{}
	}
	s.sloLeft[sloKey(t)] = sloLeft{id: t.sloID, at: mono()}
	s.slo.inMu.Lock()
	s.slo.tasks = append(s.slo.tasks, sloTask{id: t.sloID, online: t.hello.Online})
	s.slo.inMu.Unlock()
}

// request hands a measured request of t to the controller and the
// request log (loop).
func (s *Server) request(t *task, sm slo.Sample) {
	s.requests.Add(1)
	if s.requestLog != nil {
		s.requestLog.add(t, sm)
	}
	if s.slo == nil || t.sloID == "" || !t.hello.Online {
		return
	}
	s.slo.inMu.Lock()
	if len(s.slo.samples) < 1<<16 {
		s.slo.samples = append(s.slo.samples, sloSample{id: t.sloID, s: sm, alone: s.offline == 0})
	}
	s.slo.inMu.Unlock()
}

// SetTarget sets the target of the online tasks named name, now and when
// they connect again, unless their Identity names one.
func (s *Server) SetTarget(name string, t slo.Target) error {
	if s.slo == nil {
		return errors.New("slo: the server has no latency controller")
	}
	s.slo.mu.Lock()
	defer s.slo.mu.Unlock()
	if s.slo.cfg.Targets == nil {
		s.slo.cfg.Targets = map[string]slo.Target{}
	}
	s.slo.cfg.Targets[name] = t
	for id, ref := range s.slo.services {
		if ref.Name == name && !s.slo.named[id] {
			s.slo.ctrl.SetTarget(id, t)
		}
	}
	return nil
}

// SetAim sets the share of each target's budget the controller aims for
// (slo.Config.Aim).
func (s *Server) SetAim(aim float64) error {
	if s.slo == nil {
		return errors.New("slo: the server has no latency controller")
	}
	s.slo.mu.Lock()
	defer s.slo.mu.Unlock()
	return s.slo.ctrl.SetAim(aim)
}

// SetSLOActive turns the controller on (from rung 0) or off: off, the
// offline tasks are resumed, unmasked, and the policy goes back to the
// server's configured one (Config.Policy) with its defaults.
func (s *Server) SetSLOActive(ctx context.Context, on bool) error {
	if s.slo == nil {
		return errors.New("slo: the server has no latency controller")
	}
	s.slo.mu.Lock()
	was := s.slo.active
	s.slo.active = on
	if on && !was {
		s.slo.ctrl.Reset(mono())
		s.slo.since = mono()
	}
	if !on && was {
		// Off, the restraint is lifted: the controller back on rung 0
		// too, so that it takes no request for one measured alone (a
		// suspension's) while the offline jobs run.
		s.slo.ctrl.Reset(mono())
	}
	s.slo.mu.Unlock()
	if !on && was {
		return s.applyRung(ctx, slo.Rung{}, true, mono())
	}
	return nil
}

// sloLoop runs the controller until ctx ends, then lifts every
// restraint it put on.
func (s *Server) sloLoop(ctx context.Context) {
	s.slo.mu.Lock() // the controller's config changes under it (slo aim)
	tick := max(s.slo.ctrl.Config().Tick/4, 10*time.Millisecond)
	s.slo.mu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Never leave an offline job stopped or masked behind.
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.applyRung(c, slo.Rung{}, false, mono()); err != nil {
				s.cfg.Log.Warn("slo: lifting the restraint at stop", "err", err)
			}
			cancel()
			return
		case <-t.C:
			s.sloStep(ctx, mono())
		}
	}
}

// sloStep feeds the controller what the loop measured, lets it decide,
// and applies its rung.
func (s *Server) sloStep(ctx context.Context, now time.Duration) {
	st := s.slo
	st.inMu.Lock()
	tasks, samples := st.tasks, st.samples
	st.tasks, st.samples = nil, nil
	st.inMu.Unlock()

	// Which rungs restrain alike now: a mask of the first N offline tasks
	// is the shared mask beside N or fewer that can mask.
	maskable := 0
	if st.ctrl.Ladder().UsesTPCs() {
		maskable = s.maskable()
	}

	st.mu.Lock()
	st.ctrl.SetAlike(st.ctrl.Config().Ladder.Alike(maskable))
	offlineChanged := false
	for _, tk := range tasks {
		switch {
		case !tk.add:
			// Out at once (a service that went is not held for, an
			// offline task not restrained), and kept for a task of the
			// same job that comes again within sloRejoin.
			l := leftTask{at: now}
			if d, ok := st.ctrl.Detach(tk.id); ok {
				l.service = &d
			}
			if ref, ok := st.offline[tk.id]; ok {
				l.offline = &ref
				delete(st.offline, tk.id)
			}
			st.leaving[tk.id] = l
		case tk.rejoin && st.knows(tk.id):
			l := st.leaving[tk.id]
			delete(st.leaving, tk.id)
			if l.service != nil {
				st.ctrl.Attach(*l.service)
				st.services[tk.id] = tk.ref
			}
			if l.offline != nil {
				st.offline[tk.id] = tk.ref
			}
		case tk.online:
			target := tk.target
			if !tk.named {
				target = st.cfg.Default
				if t, ok := st.cfg.Targets[tk.ref.Name]; ok {
					target = t
				}
			}
			st.ctrl.AddService(tk.id, target)
			st.services[tk.id] = tk.ref
			st.named[tk.id] = tk.named
		default:
			st.offline[tk.id] = tk.ref
			offlineChanged = true
			if st.ctrl.Rung().Suspend {
				// It runs beside the services until the rung is applied
				// to it: their requests meanwhile are not alone.
				st.ctrl.SetSuspended(false, now)
			}
		}
	}
	// Tasks that went and did not come back within sloRejoin are gone:
	// what the rungs held was beside them.
	for id, l := range st.leaving {
		if now-l.at <= sloRejoin {
			continue
		}
		delete(st.leaving, id)
		delete(st.services, id)
		delete(st.named, id)
		offlineChanged = true
		if l.offline != nil {
			st.stops.Forget(l.offline.PID)
		}
	}
	if offlineChanged {
		// What each rung held or missed was beside the offline jobs of then.
		st.ctrl.Forget()
	}
	st.ctrl.SetOffline(len(st.offline))
	st.unseen = st.unseenLocked()
	st.shielded = st.shieldedLocked()
	shielded := slices.Clone(st.shielded)
	s.shielded.Store(&shielded)
	for _, sm := range samples {
		// An offline job placed here whose hook is not connected runs
		// unseen: no request is alone beside it.
		st.ctrl.Observe(sm.id, sm.s, sm.alone && len(st.unseen) == 0)
	}
	active := st.active
	var d slo.Decision
	changed := false
	if active {
		d, changed = st.ctrl.Step(now)
	}
	rung := slo.Rung{}
	if active {
		rung = st.ctrl.Rung()
	}
	var dec SLODecision
	if changed {
		// Recorded with the step that made it: a view taken while the
		// rung is applied shows the new rung with its decision.
		view := s.sloViewLocked(now, false)
		dec = SLODecision{Decision: d, Wall: time.Now(), Services: view.Services, Offline: view.Offline}
		st.decisions = append(st.decisions, dec)
		if len(st.decisions) > maxDecisions {
			st.decisions = slices.Delete(st.decisions, 0, len(st.decisions)-maxDecisions)
		}
	}
	st.mu.Unlock()
	if !active {
		return
	}
	err := s.applyRung(ctx, rung, false, now)
	if !changed {
		if st.newApplyErr(err, now) {
			s.cfg.Log.Warn("slo: applying the rung", "rung", rung, "err", err, "again_within", applyErrEvery)
		}
		return
	}
	if err != nil {
		dec.Err = err.Error()
		st.mu.Lock()
		for i := len(st.decisions) - 1; i >= 0; i-- {
			if st.decisions[i].Wall.Equal(dec.Wall) && st.decisions[i].At == d.At {
				st.decisions[i].Err = dec.Err
				break
			}
		}
		st.mu.Unlock()
	}
	if st.cfg.OnDecision != nil {
		// Its owner logs it (mmkd, with the instance): one line a
		// decision.
		st.cfg.OnDecision(dec)
		return
	}
	s.cfg.Log.Info("slo: rung", "from", d.From, "to", d.To, "rung", d.Rung.String(), "reason", d.Reason, "err", dec.Err)
}

// applyRung brings the offline tasks to a rung: the policy (guard with a
// fixed Tau while the rung holds launches, else the server's configured
// one: a policy set over the control channel meanwhile gives way), TPC
// masks and suspension. It is idempotent and called every step, so that
// offline tasks that come later are restrained too. force reapplies the
// server's own policy even if the rung's was never set. now is the
// controller's time of the application.
func (s *Server) applyRung(ctx context.Context, r slo.Rung, force bool, now time.Duration) error {
	st := s.slo
	// One application at a time (the controller's step, a control line
	// turning it off, the server's stop), each on the state it finds: a
	// step that read the controller on before it was turned off applies
	// no restraint after the lift.
	st.applyMu.Lock()
	defer st.applyMu.Unlock()
	st.mu.Lock()
	if !st.active {
		r = slo.Rung{}
	}
	st.mu.Unlock()
	var errs []error
	want, cfg := "", kernelsched.Config{}
	if r.Holds() {
		cfg.Guard.Tau = r.Tau
		if r.HoldAll {
			cfg.Guard.Tau = -1
		}
		want = "guard tau=" + cfg.Guard.Tau.String()
	}
	st.mu.Lock()
	prev := st.policy
	st.mu.Unlock()
	if want != prev || force {
		name := s.cfg.Policy
		if want != "" {
			name = "guard"
		}
		if err := s.SetPolicy(ctx, name, cfg); err != nil {
			errs = append(errs, fmt.Errorf("policy %s: %w", name, err))
		} else {
			st.mu.Lock()
			st.policy = want
			st.mu.Unlock()
		}
	}
	keep := 0
	if r.TPCs > 0 {
		keep = slo.KeptTPCs(r.TPCs, s.tpcs)
	}
	slots := s.maskSlots(keep)
	s.tpcPerRequest.Store(r.PerRequest)
	s.setTPCMask(slots, r.TPCTasks)
	st.mu.Lock()
	st.tpcKeep = s.cfg.TPCMap.Kept(slots, s.tpcs)
	// The rung stops every offline task (wanted) but those its stop
	// bound lets run now (unstopped).
	var wanted, stopped, unstopped []int
	if r.Suspend {
		for _, ref := range st.offline {
			wanted = append(wanted, ref.PID)
			if slices.Contains(st.shielded, ref.PID) {
				continue // another user's, out of this rung's reach
			}
			if st.stops.Allow(ref.PID, now) {
				stopped = append(stopped, ref.PID)
			} else {
				unstopped = append(unstopped, ref.PID)
			}
		}
		slices.Sort(stopped)
		slices.Sort(unstopped)
	}
	st.unstopped = unstopped
	have := st.suspended
	var why SuspendCause
	if len(stopped) > 0 {
		why.Services = s.sloViewLocked(now, false).Services
		if n := len(st.decisions); n > 0 {
			why.Reason = st.decisions[n-1].Reason
		}
	}
	st.mu.Unlock()
	var stop, resume []int
	for _, p := range stopped {
		if !slices.Contains(have, p) {
			stop = append(stop, p)
		}
	}
	for _, p := range have {
		if !slices.Contains(stopped, p) {
			resume = append(resume, p)
		}
	}
	// What failed is tried again at the next step: a stop that failed is
	// not counted stopped, a resume that failed still stopped.
	stoppedNow := slices.Clone(have)
	if len(resume) > 0 {
		if err := st.cfg.Suspend(resume, false, SuspendCause{}); err != nil {
			errs = append(errs, fmt.Errorf("resume %v: %w", resume, err))
		} else {
			stoppedNow = slices.DeleteFunc(stoppedNow, func(p int) bool { return slices.Contains(resume, p) })
		}
	}
	if len(stop) > 0 {
		if err := st.cfg.Suspend(stop, true, why); err != nil {
			errs = append(errs, fmt.Errorf("suspend %v: %w", stop, err))
		} else {
			stoppedNow = append(stoppedNow, stop...)
		}
	}
	slices.Sort(stoppedNow)
	st.mu.Lock()
	for _, p := range stoppedNow {
		if !slices.Contains(have, p) {
			st.stops.Stopped(p, now)
		}
	}
	for _, p := range have {
		if !slices.Contains(stoppedNow, p) {
			st.stops.Resumed(p, now)
		}
	}
	st.suspended = stoppedNow
	// A suspension that left an offline job running (its stop failed,
	// its bound lets it run, or it runs unseen) measures no service
	// alone.
	all := len(st.unseen) == 0
	for _, p := range wanted {
		all = all && slices.Contains(stoppedNow, p)
	}
	st.ctrl.SetSuspended(all, now)
	st.mu.Unlock()
	return errors.Join(errs...)
}

// SLO is the controller's state (nil view fields without a controller);
// with history, each service's points over time too.
func (s *Server) SLO(history bool) SLOView {
	if s.slo == nil {
		return SLOView{}
	}
	st := s.slo
	now := mono()
	st.mu.Lock()
	defer st.mu.Unlock()
	return s.sloViewLocked(now, history)
}

// sloViewLocked is SLO's view; the caller holds s.slo.mu.
func (s *Server) sloViewLocked(now time.Duration, history bool) SLOView {
	st := s.slo
	v := SLOView{Active: st.active, Ladder: st.ctrl.Config().Ladder.Strings(), Level: st.ctrl.Level(), Rung: st.ctrl.Rung().String(),
		Probing: st.ctrl.Probing(), Suspended: slices.Clone(st.suspended), Unstopped: slices.Clone(st.unstopped), Unseen: slices.Clone(st.unseen), Shielded: slices.Clone(st.shielded), TPCKeep: st.tpcKeep, Decisions: slices.Clone(st.decisions),
		Policy: s.Policy(), Since: s.view.wallOf(st.since), Window: st.ctrl.Config().Window, Aim: st.ctrl.Config().Aim}
	if !st.active {
		v.Level, v.Rung = 0, slo.Rung{}.String()
	}
	for _, ss := range st.ctrl.Status(now) {
		sv := ServiceView{TaskRef: st.services[ss.ID], ServiceStatus: ss}
		v.Services = append(v.Services, sv)
		if history {
			if v.History == nil {
				v.History = map[int][]Point{}
			}
			var pts []Point
			for _, p := range st.ctrl.History(ss.ID, now) {
				pts = append(pts, Point{Time: s.view.wallOf(p.Start), Point: p})
			}
			v.History[sv.PID] = pts
		}
	}
	for _, ref := range st.offline {
		v.Offline = append(v.Offline, ref)
	}
	slices.SortFunc(v.Offline, func(a, b TaskRef) int { return a.PID - b.PID })
	if st.tpcKeep > 0 {
		v.TPCStates = s.tpcStates()
	}
	return v
}

// SetTPCs lets offline tasks' kernels use share of the instance's TPCs
// (1: all) where their hooks mask (MMK_TPC_MASK=1). A latency controller
// that is on sets its own at its next step.
func (s *Server) SetTPCs(share float64) { s.setTPCs(share, false) }

// SetRequestTPCs is SetTPCs for the time an online task's request is in
// flight only (issue 52's request-scoped masks, a spike): offline
// kernels launched meanwhile keep share of the TPCs, the others every
// TPC, so that trainers pay for the mask only during requests. The
// request's start and end reach the loop at once (poll: an online hook
// wakes it), the mask the offline hooks at their next launch.
func (s *Server) SetRequestTPCs(share float64) { s.setTPCs(share, share < 1) }

func (s *Server) setTPCs(share float64, perRequest bool) {
	keep := 0
	if share < 1 {
		keep = slo.KeptTPCs(share, s.tpcs)
	}
	s.tpcPerRequest.Store(perRequest)
	s.setTPCMask(s.maskSlots(keep), 0)
}

// maskSlots is the hooks' keep count (the mask's first slots kept; 0:
// no mask) for keep of the instance's TPCs (0: every one): by the TPC
// map where there is one, so that holes among the slots are not taken
// for TPCs (slo.TPCMap.KeepSlots).
func (s *Server) maskSlots(keep int) int {
	if keep == 0 {
		return 0
	}
	return s.cfg.TPCMap.KeepSlots(keep, s.tpcs)
}

// setTPCMask has the loop hold offline tasks to keep TPCs (0: all), the
// first tasks of them to connect that can mask (0: every one).
func (s *Server) setTPCMask(keep, tasks int) {
	s.tpcMask.Store(uint64(uint32(keep)) | uint64(uint32(tasks))<<32)
}

// TPCStates is what each offline task's hook said of TPC masks, by pid:
// 0 nothing yet, TPCReady, TPCMasking, TPCNone.
func (s *Server) TPCStates() map[int]uint32 { return s.tpcStates() }

// tpcStates is what each offline task's hook said of TPC masks, by pid.
func (s *Server) tpcStates() map[int]uint32 {
	out := map[int]uint32{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if !t.hello.Online {
			out[t.hello.PID] = t.slot.tpcState()
		}
	}
	return out
}

// maskable is how many offline tasks can mask (canMask).
func (s *Server) maskable() int {
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.canMask() {
			n++
		}
	}
	return n
}

// canMask reports whether t is an offline task whose hook said it can
// mask (TPCReady or TPCMasking: a hook without MMK_TPC_MASK=1 says
// nothing, and a mask there would restrain nobody).
func (t *task) canMask() bool {
	st := t.slot.tpcState()
	return !t.hello.Online && (st == TPCReady || st == TPCMasking)
}

// retpc gives each task the TPC mask the rung asks for (offline tasks,
// or the first of them to connect that can mask; online ones keep every
// TPC); loop-owned.
func (s *Server) retpc() {
	m := s.tpcMask.Load()
	keep, n := uint32(m), int(m>>32)
	if keep > 0 && n > 0 {
		s.firstOffline(n)
	} else if len(s.tpcFirst) > 0 {
		clear(s.tpcFirst)
		s.tpcFirst = s.tpcFirst[:0]
	}
	var shielded []int
	if p := s.shielded.Load(); p != nil {
		shielded = *p
	}
	idle := s.tpcPerRequest.Load() && !s.inRequest()
	for _, t := range s.tasks {
		want := keep
		if t.hello.Online || n > 0 && !slices.Contains(s.tpcFirst, t) || slices.Contains(shielded, t.hello.PID) || idle {
			want = 0
		}
		if t.tpcKeep != want {
			t.slot.setTPCKeep(want)
			t.tpcKeep = want
		}
	}
}

// inRequest reports whether an online task's request is in flight;
// loop-owned.
func (s *Server) inRequest() bool {
	for _, t := range s.tasks {
		if t.hello.Online && t.inReq {
			return true
		}
	}
	return false
}

// firstOffline keeps in tpcFirst the first n offline tasks to have
// connected (by seq) whose hooks can mask (canMask); loop-owned.
func (s *Server) firstOffline(n int) {
	clear(s.tpcFirst[:cap(s.tpcFirst)]) // no task that left stays referenced
	s.tpcFirst = s.tpcFirst[:0]
	for _, t := range s.tasks {
		if !t.canMask() {
			continue
		}
		i, _ := slices.BinarySearchFunc(s.tpcFirst, t.seq, func(a *task, seq uint64) int { return cmp.Compare(a.seq, seq) })
		if i < n {
			s.tpcFirst = slices.Insert(s.tpcFirst, i, t)
			if len(s.tpcFirst) > n {
				s.tpcFirst = s.tpcFirst[:n]
			}
		}
	}
}

// requestLog writes measured requests as JSON lines (Config.RequestLog),
// buffered, flushed at least once a second and at Flush.
type requestLog struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	last  time.Time
	err   error
	count uint64
}

func (l *requestLog) add(t *task, sm slo.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = fmt.Appendf(l.buf, `{"pid":%d,"name":%q,"src":%q,"end_ns":%d,"lat_ns":%d}`+"\n",
		t.hello.PID, t.hello.Name, sm.Source.String(), int64(sm.At), int64(sm.Latency))
	l.count++
	if now := time.Now(); len(l.buf) > 64<<10 || now.Sub(l.last) > time.Second {
		l.flush()
		l.last = now
	}
}

func (l *requestLog) flush() {
	if len(l.buf) == 0 || l.err != nil {
		l.buf = l.buf[:0]
		return
	}
	_, l.err = l.w.Write(l.buf)
	l.buf = l.buf[:0]
}

// FlushRequestLog writes out what the request log holds; it returns the
// first write error the log met.
func (s *Server) FlushRequestLog() error {
	if s.requestLog == nil {
		return nil
	}
	l := s.requestLog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush()
	return l.err
}

// applyErrEvery is how often a failure to apply the rung in force that
// stays the same is logged again: the rung is applied at every step (a
// tick, some 8 times a second), and a suspension refused for good (a
// job in the server's own process group) filled the log with the same
// line 8 times a second.
const applyErrEvery = 30 * time.Second

// newApplyErr reports whether err, a failure to apply the rung in force
// at now, is to be logged: another than the last logged, or the same
// applyErrEvery later. A success (nil) is never logged, and forgets the
// last failure: one that comes back after it is logged again.
func (st *sloState) newApplyErr(err error, now time.Duration) bool {
	st.applyMu.Lock()
	defer st.applyMu.Unlock()
	if err == nil {
		st.applyErr = ""
		return false
	}
	if msg := err.Error(); msg != st.applyErr || now-st.applyErrAt >= applyErrEvery {
		st.applyErr, st.applyErrAt = msg, now
		return true
	}
	return false
}
