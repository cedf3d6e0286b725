package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/internal/unixsock"
	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
)

// Config sets up a server.
type Config struct {
	// Socket is the Unix socket path hooks connect to (MMK_SCHED_SOCKET).
	Socket string
	// Policy is a kernelsched policy name; Sched its configuration.
	Policy string
	Sched  kernelsched.Config
	// Profiles are the kernel profiles, selected by a task's key.
	Profiles []*kernelsched.TaskProfile
	// ProfileDir, if set, is a profile directory (kernelsched.ProfilePath):
	// a task whose key has no profile gets it from there as soon as its
	// profiling phase writes it.
	ProfileDir string
	// Spin is how long the loop keeps polling after the last launch before
	// it sleeps (default 50 µs), while some task's launches are held.
	Spin time.Duration
	// Poll is how often the loop reads the rings while no task is held
	// (default 1 ms; up to 16 times longer while no launch comes).
	Poll time.Duration
	// ObserveGrace is how long past its predicted end a kernel of a held
	// task whose hook observes completions (protocol step 7) may stay
	// unobserved before it is counted finished anyway (default 20 ms):
	// a launch the hook could not record an event for must not hold its
	// task for ever.
	ObserveGrace time.Duration
	// Loud keeps every hook's launch callbacks on, even while the policy
	// needs none of a task's launches (protocol step 8: by default such a
	// task is quiet and its launches cost only CUPTI's subscription). It
	// is for measuring the hook's cost while it reports.
	Loud bool
	// LoudGrace is how long the loop holds back held launches for a task
	// it turned loud before it goes on without the hook's echo (default
	// DefaultLoudGrace).
	LoudGrace time.Duration
	// OnConnect, if set, is called with the process id of each task that
	// connects (the kernel's word for the peer, SO_PEERCRED, where it can
	// be read; the hook's own otherwise), once its welcome is sent: mmkd
	// times a job's start-up to its first CUDA call by it.
	OnConnect func(pid int)
	// Identify, if set, names the task a connecting process is (by the
	// kernel's word for it, SO_PEERCRED): its priority, kind, task key
	// and name replace what its hook declares, and an error refuses it.
	// mmkd takes them from the job the process belongs to. Unset, the
	// hook's declaration stands (a server a user runs for their own jobs,
	// mmkctl kernelsched serve).
	Identify func(Peer) (Identity, error)
	// MaxTasks caps the tasks connected at once (default
	// DefaultMaxTasks); one more is refused. One job (Identity.Job, else
	// one process) holds at most a quarter of them, and a task beyond
	// its first only while more than a quarter stay free.
	MaxTasks int
	// SLO, if set, holds the online tasks' latency targets (slo.go).
	SLO *SLOConfig
	// TPCMap, if set, is which of the GPU's TPC mask slots are TPCs
	// (slo.TPCMap), so that a mask to a share of the TPCs keeps that
	// share of them; unset, the first slots are taken for TPCs. Its SM
	// count must be the instance's.
	TPCMap *slo.TPCMap
	// RequestLog, if set, gets every request measured, one JSON line each
	// (source hook or reported, the task, its end and latency): for
	// comparing the hook's measure with a service's own.
	RequestLog io.Writer
	// NoRequestMarks keeps quiet online tasks fully quiet: their hooks
	// mark no request (protocol step 9), which costs them nothing, and the
	// server then measures their requests only while they are loud. For
	// measuring what the marks cost.
	NoRequestMarks bool
	Log            *slog.Logger
}

// Counters are a server's running totals.
type Counters struct {
	Tasks     int    `json:"tasks"`
	Kernels   uint64 `json:"kernels"`
	AtOnce    uint64 `json:"at_once"`
	Held      uint64 `json:"held"`
	Filled    uint64 `json:"filled"`
	FailOpens uint64 `json:"fail_opens"`
	// Went counts launches of held tasks that the hook let go without a
	// decision (it failed open and had not yet seen the server catch up).
	Went uint64 `json:"went"`
	// Unprofiled counts launches whose kernel the task's profile lacks
	// (or the task has none): policies predict nothing for them.
	Unprofiled uint64 `json:"unprofiled"`
	Refused    uint64 `json:"refused"`
	// Observed counts kernels of held tasks counted finished because the
	// GPU said so (an event the hook recorded completed); Unobserved
	// those counted finished ObserveGrace past their predicted end
	// without it.
	Observed   uint64 `json:"observed"`
	Unobserved uint64 `json:"unobserved"`
	// Quiet is the number of tasks whose launches the policy needs not
	// now (their hooks report none); LoudLate counts tasks turned loud
	// whose hooks had not said so within LoudGrace.
	Quiet    int    `json:"quiet"`
	LoudLate uint64 `json:"loud_late"`
	// Waits is how often the loop blocked, waiting for a launch, a
	// hook's wake-up or a timer: its cost in system calls.
	Waits uint64 `json:"waits"`
	// Requests counts the online requests measured (hook or reported);
	// BadReports the reported requests dropped as implausible (ending
	// before they start, starting before the task connected, or longer
	// than any target's bound may be).
	Requests   uint64 `json:"requests"`
	BadReports uint64 `json:"bad_reports"`
	// Uncorroborated counts the reported requests not measured because
	// the task's hook saw no GPU work of it in them (no launch, mark or
	// synchronisation between their start and end).
	Uncorroborated uint64 `json:"uncorroborated_reports"`
	// ReportsLimited counts the reported requests dropped past a task's
	// rate (MaxReportRate a second).
	ReportsLimited uint64 `json:"reports_limited"`
}

// Server is one instance's kernel scheduler server.
type Server struct {
	cfg      Config
	core     *kernelsched.Scheduler
	profiles map[string]*kernelsched.TaskProfile
	// profileErrs is the last error loading each key's profile, said once.
	profileErrs map[string]string
	wake        int // eventfd, -1 outside Serve
	// wakeMu guards wake against poke from outside the loop (SetPolicy
	// before or after Serve must not write to another file).
	wakeMu sync.RWMutex

	mu     sync.Mutex // guards events and each task's names
	events []event
	tasks  map[kernelsched.TaskID]*task

	kernels, atOnce, held, filled, refused atomic.Uint64
	went, unprofiled, observed, unobserved atomic.Uint64
	waits, loudLate, requests, badReports  atomic.Uint64
	uncorroborated, reportsLimited         atomic.Uint64
	nquiet                                 atomic.Int64
	failOpensGone                          atomic.Uint64
	ntasks                                 atomic.Int64
	// shares keeps one job from taking all task slots or names' memory.
	shares     *shares
	policyName atomic.Pointer[string]

	// The sockets served besides Config.Socket (Listen), while Serve
	// runs (lnCtx set); accepting counts the goroutines accepting on any.
	lnMu      sync.Mutex
	lnCtx     context.Context
	extra     map[string]*net.UnixListener
	accepting sync.WaitGroup

	// Loop-owned: whether some task's launches wait for grants, and the
	// current poll interval while none does.
	anyHeld bool
	idle    time.Duration
	// nextLook is when the loop next looks for missing profiles.
	nextLook time.Duration
	// view is what Tasks, Queues and Timeline read; lastPublish when the
	// loop last refreshed it.
	view        view
	lastPublish time.Duration
	// The latency controller (nil: none); loop-owned: the offline tasks
	// registered and the last controller id given.
	slo     *sloState
	offline int
	sloSeq  uint64
	// shielded are the offline tasks (by pid) that no present service
	// may mask or suspend (another user's, Identity.RestrainOthers),
	// set by the controller, read by the loop.
	shielded atomic.Pointer[[]int]
	// sloLeft are the controller ids of tasks that went, by the job (or
	// process) they were of, for a task of it that connects again within
	// sloRejoin: it is the same service to the controller (issue 54).
	sloLeft map[string]sloLeft
	// tpcMask is the TPCs offline tasks may use (low 32 bits; 0: all)
	// and how many offline tasks that holds (high 32 bits; 0: all), set
	// together by the controller (or SetTPCs), applied by the loop; tpcs
	// is the instance's TPC count (two SMs each, Ampere and Hopper);
	// tpcFirst the loop's scratch: the first offline tasks to connect
	// that can mask.
	tpcMask atomic.Uint64
	// tpcPerRequest: the mask holds offline tasks only while an online
	// task's request is in flight (SetRequestTPCs).
	tpcPerRequest atomic.Bool
	tpcs          int
	tpcFirst      []*task
	// connected counts the hooks let in: each task's seq, the order of
	// connection (ids are reused).
	connected atomic.Uint64
	// requestLog, if set, takes every measured request (Config.RequestLog).
	requestLog *requestLog
}

type event struct {
	add    *task
	remove *task
	policy *policyChange
	loud   *loudChange
}

// loudChange is a live switch of Config.Loud (SetLoud).
type loudChange struct {
	on   bool
	done chan struct{}
}

// policyChange is a live switch of the policy (SetPolicy).
type policyChange struct {
	name string
	cfg  kernelsched.Config
	done chan error
}

type task struct {
	id    kernelsched.TaskID
	seq   uint64        // the order it connected in (Server.connected)
	since time.Duration // when it connected, on the loop's clock
	hello Hello
	slot  *slot
	conn  *net.UnixConn
	names map[uint32]string // under Server.mu
	ready chan bool         // the loop registered the task (false: refused)
	// Loop-owned.
	local    map[uint32]string
	ringSeq  []uint64 // ring seqs of launches held in the core, in order
	free     bool
	flagged  bool          // free was written to the slot once
	quiet    bool          // the slot says the policy needs none of its launches
	loudAt   time.Duration // turned loud then, its hook has not yet echoed loudWord; 0: none
	loudWord uint32
	done     []done // released kernels, predicted ends, in order
	lastEnd  time.Duration
	syncing  int // synchronisations the task is inside
	// A request runs from reqStart (inReq): the first launch after a
	// synchronisation returned, or the hook's mark (protocol step 9).
	inReq    bool
	reqStart time.Duration
	// warnedReport: an implausible report of the task was logged;
	// warnedAlone one its hook did not corroborate.
	warnedReport, warnedAlone bool
	// acts are the times of the task's last GPU work the hook showed
	// (launches, marks, synchronisations), a ring: a report is
	// measured only where one falls in it (corroborated).
	acts  [64]time.Duration
	nacts int
	// reportTokens and reportAt are the task's report budget
	// (MaxReportRate) and when it was last filled.
	reportTokens float64
	reportAt     time.Duration
	// tpcKeep is the keep count in the slot: its kernels use the first
	// tpcKeep TPC slots (0: all).
	tpcKeep uint32
	// user is the uid of the task's process (SO_PEERCRED; -1: unknown);
	// others: its target may restrain other users' tasks beyond guard
	// (Identity.RestrainOthers, every target without Identify).
	user   int
	others bool
	// nt is the names' table (names and its bytes under Server.mu);
	// shareOf the job whose share of slots and names the task holds
	// (shares).
	nt      *nameTable
	shareOf string
	// job and target are what the server's owner said of the task
	// (Identity); sloID names it to the latency controller.
	job    string
	target *slo.Target
	sloID  string
}

// done is a released kernel: its core seq, its ring seq, its predicted
// end, and whether its hook records an event for it (it was released
// while the task was observed).
type done struct {
	seq, ring uint64
	at        time.Duration
	observed  bool
}

// New checks the configuration and builds the core.
func New(cfg Config) (*Server, error) {
	if cfg.Socket == "" {
		return nil, errors.New("kernel scheduler server: socket path is empty")
	}
	if cfg.Spin == 0 {
		cfg.Spin = 50 * time.Microsecond
	}
	if cfg.LoudGrace <= 0 {
		cfg.LoudGrace = DefaultLoudGrace
	}
	if cfg.ObserveGrace == 0 {
		cfg.ObserveGrace = 20 * time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Millisecond
	}
	if cfg.Spin < 0 || cfg.Poll < 0 {
		return nil, fmt.Errorf("kernel scheduler server: spin %v and poll %v must not be negative", cfg.Spin, cfg.Poll)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxTasks <= 0 {
		cfg.MaxTasks = DefaultMaxTasks
	}
	core, err := kernelsched.New(cfg.Policy, cfg.Sched)
	if err != nil {
		return nil, err
	}
	sms := cfg.Sched.SMs
	if sms == 0 {
		sms = kernelsched.DefaultConfig().SMs
	}
	if m := cfg.TPCMap; m != nil && m.SMs != sms {
		return nil, fmt.Errorf("kernel scheduler server: the TPC map is of a GPU of %d SMs (%s), this instance has %d", m.SMs, m.UUID, sms)
	}
	st, err := newSLO(cfg.SLO)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, core: core, profiles: map[string]*kernelsched.TaskProfile{}, profileErrs: map[string]string{}, tasks: map[kernelsched.TaskID]*task{}, wake: -1, slo: st,
		shares: newShares(cfg.MaxTasks),
		tpcs:   slo.TPCsOf(sms)}
	s.policyName.Store(&cfg.Policy)
	if cfg.RequestLog != nil {
		s.requestLog = &requestLog{w: cfg.RequestLog}
	}
	s.view.init()
	for _, p := range cfg.Profiles {
		s.profiles[p.Key] = p
	}
	return s, nil
}

// Policy is the name of the policy in force.
func (s *Server) Policy() string { return *s.policyName.Load() }

// Counters returns the running totals.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	live := uint64(0)
	for _, t := range s.tasks {
		live += t.slot.failOpens()
	}
	s.mu.Unlock()
	return Counters{
		Tasks: int(s.ntasks.Load()), Kernels: s.kernels.Load(), AtOnce: s.atOnce.Load(), Held: s.held.Load(),
		Filled: s.filled.Load(), FailOpens: s.failOpensGone.Load() + live, Went: s.went.Load(), Unprofiled: s.unprofiled.Load(),
		Observed: s.observed.Load(), Unobserved: s.unobserved.Load(), Quiet: int(s.nquiet.Load()), LoudLate: s.loudLate.Load(),
		Refused: s.refused.Load(), Waits: s.waits.Load(), Requests: s.requests.Load(), BadReports: s.badReports.Load(), Uncorroborated: s.uncorroborated.Load(), ReportsLimited: s.reportsLimited.Load(),
	}
}

// SetLoud switches Config.Loud on the running server: on, every quiet
// task turns loud at once; off, tasks whose launches the policy needs not
// turn quiet. It waits for the loop, at most until ctx ends.
func (s *Server) SetLoud(ctx context.Context, on bool) error {
	c := &loudChange{on: on, done: make(chan struct{})}
	s.post(event{loud: c})
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetPolicy switches the running server to another policy (or the same
// one with other parameters) between two decisions; held launches stay
// held and the new policy decides them. It waits for the loop, at most
// until ctx ends.
func (s *Server) SetPolicy(ctx context.Context, name string, cfg kernelsched.Config) error {
	if _, err := kernelsched.NewPolicy(name); err != nil {
		return err
	}
	c := &policyChange{name: name, cfg: cfg, done: make(chan error, 1)}
	s.post(event{policy: c})
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Serve listens on the socket (mode 0600, whatever the umask: only the
// server's user connects, and users it opens sockets of their own for,
// Listen) and schedules until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	ln, err := unixsock.Listen(s.cfg.Socket, 0o600, -1, -1)
	if err != nil {
		return fmt.Errorf("kernel scheduler server: %w", err)
	}
	defer os.Remove(s.cfg.Socket)
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		ln.Close()
		return fmt.Errorf("kernel scheduler server: eventfd: %w", err)
	}
	s.wakeMu.Lock()
	s.wake = wake
	s.wakeMu.Unlock()
	defer func() {
		s.wakeMu.Lock()
		s.wake = -1
		s.wakeMu.Unlock()
		unix.Close(wake)
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.serving(ctx); err != nil {
		ln.Close()
		return err
	}
	go func() {
		<-ctx.Done()
		ln.Close()
		s.closeListeners()
		s.poke()
	}()
	s.accepting.Add(1)
	go func() {
		defer s.accepting.Done()
		s.accept(ctx, ln)
	}()
	s.cfg.Log.Info("kernel scheduler serving", "socket", s.cfg.Socket, "policy", s.cfg.Policy, "protocol", ProtoVersion)
	if s.slo != nil {
		sloDone := make(chan struct{})
		loopCtx, stopLoop := context.WithCancel(context.Background())
		go func() {
			defer close(sloDone)
			s.sloLoop(ctx)
		}()
		// The loop outlives the controller: lifting its restraint at the
		// end switches the policy through the loop.
		go func() {
			<-sloDone
			stopLoop()
		}()
		s.loop(loopCtx)
		stopLoop()
	} else {
		s.loop(ctx)
	}
	if err := s.FlushRequestLog(); err != nil {
		s.cfg.Log.Warn("kernel scheduler: request log", "err", err)
	}
	s.accepting.Wait()
	s.mu.Lock()
	for _, t := range s.tasks {
		t.conn.Close()
		t.slot.close()
	}
	s.mu.Unlock()
	return nil
}

// poke wakes the loop; outside Serve there is none to wake (the loop
// applies the events queued before it on its first turn).
func (s *Server) poke() {
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	s.wakeMu.RLock()
	defer s.wakeMu.RUnlock()
	if s.wake >= 0 {
		_, _ = unix.Write(s.wake, one)
	}
}

func (s *Server) accept(ctx context.Context, ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Log.Error("kernel scheduler accept", "err", err)
			}
			return
		}
		go s.handle(ctx, c)
	}
}

// handle runs one hook's connection: handshake, then names until EOF.
func (s *Server) handle(ctx context.Context, c *net.UnixConn) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, helloSize)
	if _, err := io.ReadFull(c, buf); err != nil {
		s.cfg.Log.Warn("kernel scheduler: no hello", "err", err)
		c.Close()
		return
	}
	h, err := parseHello(buf)
	var id *Identity
	if err == nil {
		h, id, err = s.identify(c, h)
	}
	// The task's process is the kernel's word for the peer wherever it
	// can be read, never the hook's (which names a process of another
	// namespace in a container, or any process it likes): the latency
	// controller signals it.
	h.PID = peerPID(c, h.PID)
	job := s.jobOf(c, h, id)
	if err == nil {
		err = s.shares.admit(job)
	}
	if err != nil {
		s.refused.Add(1)
		s.cfg.Log.Warn("kernel scheduler: hook refused", "err", err)
		_, _ = c.Write(welcome(2))
		c.Close()
		return
	}
	sl, err := newSlot(h.Name)
	if err != nil {
		s.shares.leave(job, 0)
		s.cfg.Log.Error("kernel scheduler", "err", err)
		c.Close()
		return
	}
	t := &task{hello: h, slot: sl, conn: c, names: map[uint32]string{}, local: map[uint32]string{}, ready: make(chan bool, 1), shareOf: job,
		seq: s.connected.Add(1), since: mono()}
	t.nt = &nameTable{mu: &s.mu, names: t.names,
		take: func(n int) bool { return s.shares.takeNames(job, n) },
		give: func(n int) { s.shares.giveNames(job, n) }}
	t.user, t.others = -1, id == nil
	if p, ok := peerOf(c); ok {
		t.user = p.UID
	}
	if id != nil {
		t.job, t.target, t.others = id.Job, id.Target, id.RestrainOthers
	}
	// The loop registers the task and sets its free flag before the hook
	// may launch.
	s.post(event{add: t})
	select {
	case ok := <-t.ready:
		if !ok {
			s.shares.leave(job, 0)
			_, _ = c.Write(welcome(2))
			c.Close()
			sl.close()
			return
		}
	case <-ctx.Done():
		c.Close()
		return
	}
	if _, _, err := c.WriteMsgUnix(welcome(0), unix.UnixRights(sl.fd, s.wake), nil); err != nil {
		s.cfg.Log.Warn("kernel scheduler: welcome", "err", err)
		s.gone(t)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.cfg.Log.Info("kernel scheduler: task connected", "name", h.Name, "pid", h.PID, "priority", h.Priority, "online", h.Online, "key", h.TaskKey)
	if s.cfg.OnConnect != nil {
		s.cfg.OnConnect(peerPID(c, h.PID))
	}
	if err := readNames(c, t.nt); err != nil && ctx.Err() == nil {
		s.cfg.Log.Warn("kernel scheduler: dropping the task", "name", h.Name, "pid", h.PID, "err", err)
	}
	s.gone(t)
}

func (s *Server) gone(t *task) {
	t.conn.Close()
	s.post(event{remove: t})
}

// post queues an event for the loop and wakes it.
func (s *Server) post(e event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	s.poke()
}

// mono is CLOCK_MONOTONIC, the hook's clock.
func mono() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}
