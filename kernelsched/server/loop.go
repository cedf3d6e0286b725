package server

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
)

// Marks in an entry's api field (proto.h): a launch that went without
// waiting (MMK_ENTRY_WENT); no launch but a synchronisation that starts
// or returned (MMK_ENTRY_SYNC_ENTER, MMK_ENTRY_SYNC_EXIT), an observed
// completion (MMK_ENTRY_DONE), a request's start (MMK_ENTRY_MARK) or a
// request the service reported (MMK_ENTRY_REQUEST).
const (
	entryWent      = 0x80000000
	entrySync      = 0x40000000
	entrySyncEnter = entrySync | 1
	entrySyncExit  = entrySync | 2
	entryDone      = 0x20000000
	entryMark      = 0x10000000
	entryRequest   = 0x08000000
)

// loop owns the core: it reads the rings, runs the policy, grants, and
// sleeps when nothing happens.
func (s *Server) loop(ctx context.Context) {
	lastBusy := mono()
	for ctx.Err() == nil {
		changed := s.applyEvents()
		now := mono()
		s.lookForProfiles(now)
		busy := s.drain(now)
		s.completeDue(now)
		// While a task turned loud cannot yet be seen, nothing held is
		// released: no policy decides on a task whose launches it misses.
		deaf := s.deaf(now) && s.anyHeld
		var released []kernelsched.Launch
		wake := kernelsched.Never
		if !deaf {
			released, wake = s.core.Schedule(now)
		}
		for _, l := range released {
			s.granted(l, now)
		}
		changed = s.refree() || changed
		changed = s.requiet(now) || changed
		s.retpc()
		if changed || ((busy || len(released) > 0) && now-s.lastPublish >= publishEvery) {
			s.publish()
			s.lastPublish = now
		}
		if !s.anyHeld {
			// Every task's launches go at once: no hook waits on a
			// decision, so the loop polls instead of spinning, and hooks
			// wake it only when a ring fills up. Nor do the core's timers
			// and predicted completions matter until a task is held: the
			// next read reports the completions that fell due meanwhile.
			s.poll(busy, now)
			continue
		}
		if deaf || busy || len(released) > 0 {
			lastBusy = now
			continue
		}
		if now-lastBusy < s.cfg.Spin {
			continue
		}
		s.sleep(min(wake, s.nextDone()), now)
		lastBusy = mono()
	}
}

// publishEvery is how often the loop refreshes the view while launches
// flow (tasks that come or go refresh it at once).
const publishEvery = 20 * time.Millisecond

// applyEvents registers new tasks and drops gone ones; it reports whether
// there were any.
func (s *Server) applyEvents() bool {
	s.mu.Lock()
	evs := s.events
	s.events = nil
	s.mu.Unlock()
	if len(evs) == 0 {
		return false
	}
	for _, e := range evs {
		switch {
		case e.add != nil:
			t := e.add
			spec := kernelsched.TaskSpec{Name: t.hello.Name, Key: t.hello.TaskKey, Priority: t.hello.Priority, Online: t.hello.Online,
				MPSPercent: t.hello.MPSPercent, Profile: s.profile(t.hello.TaskKey)}
			id, err := s.core.AddTask(spec)
			if err != nil {
				s.refused.Add(1)
				s.cfg.Log.Warn("kernel scheduler: task refused", "name", t.hello.Name, "err", err)
				t.ready <- false
				continue
			}
			t.id = id
			s.mu.Lock()
			s.tasks[id] = t
			s.mu.Unlock()
			s.ntasks.Add(1)
			if !t.hello.Online {
				s.offline++
			}
			s.sloTaskAdded(t)
		case e.policy != nil:
			err := s.core.SetPolicy(e.policy.name, e.policy.cfg)
			if err == nil {
				s.policyName.Store(&e.policy.name)
				s.cfg.Log.Info("kernel scheduler: policy switched", "policy", e.policy.name)
			}
			e.policy.done <- err
		case e.loud != nil:
			s.cfg.Loud = e.loud.on
			s.cfg.Log.Info("kernel scheduler: loud switched", "loud", e.loud.on)
			close(e.loud.done)
		case e.remove != nil:
			t := e.remove
			s.mu.Lock()
			registered := s.tasks[t.id] == t
			if registered {
				delete(s.tasks, t.id)
			}
			s.mu.Unlock()
			if !registered {
				t.slot.close()
				continue
			}
			// Launches the task published before it went still count.
			now := mono()
			for e, ok := t.slot.next(); ok; e, ok = t.slot.next() {
				s.arrive(t, e, now)
			}
			if err := s.core.RemoveTask(t.id); err != nil {
				s.cfg.Log.Warn("kernel scheduler: remove task", "name", t.hello.Name, "err", err)
			}
			s.failOpensGone.Add(t.slot.failOpens())
			s.mu.Lock()
			kept := t.nt.bytes
			s.mu.Unlock()
			s.shares.leave(t.shareOf, kept)
			if t.quiet {
				s.nquiet.Add(-1)
			}
			t.slot.close()
			s.ntasks.Add(-1)
			if !t.hello.Online {
				s.offline--
			}
			s.sloTaskRemoved(t)
			s.cfg.Log.Info("kernel scheduler: task gone", "name", t.hello.Name, "pid", t.hello.PID)
		}
	}
	// Who goes at once, and whose launches the policy needs, depends on
	// who else is registered.
	s.refree()
	s.requiet(mono())
	for _, t := range s.tasks {
		select {
		case t.ready <- true:
		default: // told before
		}
	}
	return true
}

// refree sets each task's free flag from the policy, which may change its
// mind at any decision (guard frees offline tasks while priority alone
// protects the online ones), and reports whether any flag changed. A task
// that turns held has the launches the hook already let go granted; one
// that turns free has every launch it waits on granted, since its hook
// threads wait on the grant word, not on the flag.
func (s *Server) refree() bool {
	changed := false
	s.anyHeld = false
	for _, t := range s.tasks {
		ct, err := s.core.Task(t.id)
		if err != nil {
			continue
		}
		free := s.core.ReleasesAtOnce(ct)
		s.anyHeld = s.anyHeld || !free
		if free == t.free && t.flagged {
			continue
		}
		changed = true
		t.free, t.flagged = free, true
		t.slot.setFree(free)
		// Granting up to the hook's head covers both turns: held, the
		// launches it let go; free, those it waits on.
		t.slot.grant(t.slot.headSeen())
	}
	return changed
}

// DefaultLoudGrace is Config.LoudGrace when unset: how long the loop
// holds back held launches for a task it turned loud (protocol step 8)
// before it goes on without the hook's echo. The hook's watcher thread
// wakes on the quiet word and turns the launch callbacks on within
// microseconds; a hook that stays silent must not stall the held tasks
// for longer than a fraction of their grant bound.
const DefaultLoudGrace = 2 * time.Millisecond

// requiet sets each task's quiet flag from the policy (protocol step 8)
// and reports whether any changed. A task turned loud is awaited (deaf)
// until its hook echoes the quiet word that turned it.
func (s *Server) requiet(now time.Duration) bool {
	changed := false
	for _, t := range s.tasks {
		ct, err := s.core.Task(t.id)
		if err != nil {
			continue
		}
		quiet := !s.cfg.Loud && s.core.Quiet(ct)
		if quiet == t.quiet {
			continue
		}
		changed = true
		t.quiet = quiet
		word := t.slot.setQuiet(quiet, t.hello.Online && !s.cfg.NoRequestMarks)
		t.loudAt = 0
		if quiet {
			s.nquiet.Add(1)
			continue
		}
		s.nquiet.Add(-1)
		t.loudAt, t.loudWord = now, word
	}
	return changed
}

// deaf reports whether some task turned loud has not yet echoed the word
// that turned it (its launch callbacks are not yet on), for less than
// Config.LoudGrace.
func (s *Server) deaf(now time.Duration) bool {
	waiting := false
	for _, t := range s.tasks {
		switch {
		case t.loudAt == 0:
		case t.slot.quietAck() == t.loudWord:
			t.loudAt = 0
		case now-t.loudAt >= s.cfg.LoudGrace:
			t.loudAt = 0
			s.loudLate.Add(1)
			s.cfg.Log.Warn("kernel scheduler: a task turned loud did not turn its launch callbacks on in time; deciding without them",
				"task", t.hello.Name, "pid", t.hello.PID, "grace", s.cfg.LoudGrace)
		default:
			waiting = true
		}
	}
	return waiting
}

// drain reads every published launch into the core.
func (s *Server) drain(now time.Duration) bool {
	busy := false
	for _, t := range s.tasks {
		for {
			e, ok := t.slot.next()
			if !ok {
				break
			}
			busy = true
			s.arrive(t, e, now)
		}
	}
	return busy
}

func (s *Server) arrive(t *task, e entry, now time.Duration) {
	switch e.api {
	case entryDone:
		s.observedDone(t, e, now)
		return
	case entryMark:
		t.act(stamp(e, now))
		t.begin(stamp(e, now))
		return
	case entryRequest:
		if !t.mayReport(now) {
			s.reportsLimited.Add(1)
			return
		}
		start := time.Duration(uint64(e.grid[0]) | uint64(e.grid[1])<<32)
		end := stamp(e, now)
		if !plausible(t, start, end) {
			s.badReports.Add(1)
			if !t.warnedReport {
				t.warnedReport = true
				s.cfg.Log.Warn("kernel scheduler: a reported request is implausible, dropped (and the task's next ones, counted in bad_reports)",
					"task", t.hello.Name, "pid", t.hello.PID, "start", start, "end", end, "connected", t.since)
			}
			return
		}
		// Without request marks a quiet hook shows nothing to
		// corroborate with: reports are then taken as they come.
		if !s.cfg.NoRequestMarks && !t.workedIn(start, end+corroborationSlack) {
			s.uncorroborated.Add(1)
			if !t.warnedAlone {
				t.warnedAlone = true
				s.cfg.Log.Warn("kernel scheduler: a reported request had no GPU work of its task in it; not measured (nor the task's next such ones, counted in uncorroborated_reports)",
					"task", t.hello.Name, "pid", t.hello.PID, "start", start, "end", end)
			}
			return
		}
		s.request(t, slo.Sample{At: end, Latency: end - start, Source: slo.Reported})
		return
	}
	if e.api&entrySync != 0 {
		t.act(stamp(e, now))
		s.sync(t, e, now)
		return
	}
	name, ok := t.local[e.nameID]
	if !ok {
		s.mu.Lock()
		name, ok = t.names[e.nameID]
		s.mu.Unlock()
		if ok {
			t.local[e.nameID] = name
		} else {
			name = "?"
		}
	}
	ct, err := s.core.Task(t.id)
	if err != nil {
		return
	}
	id := kernelsched.KernelID{Name: name, Grid: kernelsched.Dim3(e.grid), Block: kernelsched.Dim3(e.block)}
	l := kernelsched.Launch{Task: t.id, Kernel: id, SharedMem: int(e.sharedMem)}
	if ct.Spec.Profile != nil {
		l.Est = ct.Spec.Profile.Estimate(id)
	}
	// A launch that went at once carries no time stamp (0): the loop,
	// which reads the rings at once while another task waits, stamps it.
	// The first launch after a synchronisation is stamped: it begins a
	// request.
	at := stamp(e, now)
	t.act(at)
	if e.tNs != 0 {
		t.begin(at)
	}
	if e.api&entryWent != 0 && !t.free {
		// The hook failed open: the launch went without a decision.
		seq, err := s.core.Went(at, l)
		if err != nil {
			s.cfg.Log.Debug("kernel scheduler: launch not scheduled", "task", t.hello.Name, "err", err)
			return
		}
		s.count(l)
		s.went.Add(1)
		s.expectDone(t, seq, e.seq, l.Est, now)
		return
	}
	if _, err := s.core.Arrive(at, l); err != nil {
		// A launch the core cannot take (a zero dimension, which CUDA
		// refuses anyway) goes unheld, unless an earlier launch is still
		// held: a grant lets every launch up to it go, so this one then
		// waits for the next grant (or its bound).
		s.cfg.Log.Debug("kernel scheduler: launch not scheduled", "task", t.hello.Name, "err", err)
		if len(t.ringSeq) == 0 {
			t.slot.grant(e.seq)
		}
		return
	}
	s.count(l)
	t.ringSeq = append(t.ringSeq, e.seq)
	if e.api&entryWent != 0 {
		s.atOnce.Add(1)
	}
}

// plausible reports whether a request a task reported (its start and
// end on the loop's clock) can be one: it ends after it starts, starts
// no earlier than the task connected, and lasts no longer than the
// longest bound a target may have (slo.MaxBound). A report of start 0
// read as a request 34 minutes long (issue 54).
func plausible(t *task, start, end time.Duration) bool {
	return end >= start && start >= t.since && end-start <= slo.MaxBound
}

// MaxReportRate is how many requests a second a task may report (a
// burst of as many at once): past it reports are dropped and counted
// (Counters.ReportsLimited). A service of batch 1 on a fast model makes
// a few hundred a second; a flood of reports once made a hook reconnect
// 7 times in 30 s (issue 54).
const MaxReportRate = 5000

// mayReport takes one report from the task's budget at now (the loop's
// clock), refilled at MaxReportRate.
func (t *task) mayReport(now time.Duration) bool {
	if t.reportAt == 0 {
		t.reportTokens, t.reportAt = MaxReportRate, now
	}
	t.reportTokens = min(MaxReportRate, t.reportTokens+(now-t.reportAt).Seconds()*MaxReportRate)
	t.reportAt = now
	if t.reportTokens < 1 {
		return false
	}
	t.reportTokens--
	return true
}

// corroborationSlack is how long after a reported request's end its
// task's GPU work may be stamped and still corroborate it: a launch the
// hook does not stamp gets the loop's time when read, a moment later.
const corroborationSlack = 5 * time.Millisecond

// act notes GPU work of the task at at (a launch, mark or
// synchronisation).
func (t *task) act(at time.Duration) {
	t.acts[t.nacts%len(t.acts)] = at
	t.nacts++
}

// workedIn reports whether the task's hook showed GPU work of it between
// from and to: a reported request is measured (can make the controller
// restrain others) only where its task's own work overlaps it (issue 54:
// a service that launched nothing reported late requests and kept other
// tenants' jobs stopped).
func (t *task) workedIn(from, to time.Duration) bool {
	for i := range min(t.nacts, len(t.acts)) {
		if a := t.acts[i]; a >= from && a <= to {
			return true
		}
	}
	return false
}

// stamp is an entry's time on the loop's clock: the hook's stamp, never
// after now; now for an entry without one.
func stamp(e entry, now time.Duration) time.Duration {
	if e.tNs == 0 {
		return now
	}
	return min(time.Duration(e.tNs), now)
}

// begin starts a request of t at at unless one runs.
func (t *task) begin(at time.Duration) {
	if !t.inReq {
		t.inReq, t.reqStart = true, at
	}
}

// count counts a launch the core took, and whether its task's profile
// lacks its kernel.
func (s *Server) count(l kernelsched.Launch) {
	s.kernels.Add(1)
	if !l.Est.Known {
		s.unprofiled.Add(1)
	}
}

// granted books a release: the hook may launch, and the kernel is taken
// to end after its profiled duration.
func (s *Server) granted(l kernelsched.Launch, now time.Duration) {
	t := s.tasks[l.Task]
	if t == nil || len(t.ringSeq) == 0 {
		return
	}
	seq := t.ringSeq[0]
	t.ringSeq = t.ringSeq[1:]
	if !t.free {
		t.slot.grant(seq)
		s.held.Add(1)
		if top := s.core.TopActive(now); top >= 0 && t.hello.Priority > top {
			s.filled.Add(1)
		}
	}
	s.expectDone(t, l.Seq, seq, l.Est, now)
}

// expectDone books a kernel released now (core seq, ring seq) to end after
// its profiled duration, after the task's kernels before it (one stream).
func (s *Server) expectDone(t *task, seq, ring uint64, est kernelsched.Estimate, now time.Duration) {
	start := max(now, t.lastEnd)
	end := start + est.SK
	t.lastEnd = end
	s.view.record(t, start, end)
	t.done = append(t.done, done{seq: seq, ring: ring, at: end, observed: t.observing()})
}

// observedDone takes an observed completion (protocol step 7): every
// kernel the task released up to the launch it names has finished, at
// the hook's time stamp.
func (s *Server) observedDone(t *task, e entry, now time.Duration) {
	upTo := uint64(e.grid[0]) | uint64(e.grid[1])<<32
	at := now
	if e.tNs != 0 {
		at = min(time.Duration(e.tNs), now)
	}
	n := 0
	for _, d := range t.done {
		if d.ring > upTo {
			t.done[n] = d
			n++
			continue
		}
		if err := s.core.Complete(at, t.id, d.seq); err != nil {
			s.cfg.Log.Debug("kernel scheduler: observed completion", "task", t.hello.Name, "err", err)
			continue
		}
		s.observed.Add(1)
	}
	t.done = t.done[:n]
}

// observing reports whether the task's kernels are counted finished when
// the GPU says so rather than when predicted: its hook records events
// while it is held.
func (t *task) observing() bool { return !t.free && t.slot.observeEvery() > 0 }

// sync follows a task's synchronisations. While the task is inside one,
// its released kernels are still on the GPU whatever their profiled
// durations predict (they may queue behind other tasks' kernels), so they
// are not completed at their predicted ends; when it returns, every kernel
// the task had released has finished, at the hook's time stamp.
func (s *Server) sync(t *task, e entry, now time.Duration) {
	switch e.api {
	case entrySyncEnter:
		t.syncing++
		return
	case entrySyncExit:
		if t.syncing > 0 {
			t.syncing--
		}
	default:
		s.cfg.Log.Debug("kernel scheduler: unknown entry", "task", t.hello.Name, "api", e.api)
		return
	}
	if t.syncing > 0 {
		return
	}
	at := stamp(e, now)
	if t.inReq {
		t.inReq = false
		s.request(t, slo.Sample{At: at, Latency: max(at-t.reqStart, 0), Source: slo.Hook})
	}
	if err := s.core.Synced(at, t.id); err != nil {
		s.cfg.Log.Debug("kernel scheduler: synced", "task", t.hello.Name, "err", err)
	}
	t.done = t.done[:0]
	t.lastEnd = at
}

// completeDue reports predicted completions to the core, except for tasks
// inside a synchronisation (see sync). A kernel released while its task
// was observed (observing) waits for the GPU's word, or ObserveGrace past
// its prediction. A task's predicted ends never decrease along t.done
// (one stream), and nothing is due before its predicted end, so the scan
// stops at the first kernel predicted to end after now.
func (s *Server) completeDue(now time.Duration) {
	for _, t := range s.tasks {
		if t.syncing > 0 {
			continue
		}
		n, i := 0, 0
		for ; i < len(t.done) && t.done[i].at <= now; i++ {
			d := t.done[i]
			end := s.due(d)
			if end > now {
				t.done[n] = d
				n++
				continue
			}
			if err := s.core.Complete(end, t.id, d.seq); err != nil {
				s.cfg.Log.Debug("kernel scheduler: complete", "task", t.hello.Name, "err", err)
			}
			if d.observed {
				s.unobserved.Add(1)
			}
		}
		n += copy(t.done[n:], t.done[i:])
		t.done = t.done[:n]
	}
}

// due is when a released kernel is counted finished without the GPU's
// word.
func (s *Server) due(d done) time.Duration {
	if d.observed {
		return d.at + s.cfg.ObserveGrace
	}
	return d.at
}

func (s *Server) nextDone() time.Duration {
	next := kernelsched.Never
	for _, t := range s.tasks {
		if t.syncing > 0 {
			continue
		}
		// Predicted ends never decrease along t.done (see completeDue).
		for _, d := range t.done {
			if d.at >= next {
				break
			}
			next = min(next, s.due(d))
		}
	}
	return next
}

// poll sleeps between reads of the rings while no task is held: Poll
// after a read that found launches, doubling up to 16 Poll while none come.
func (s *Server) poll(busy bool, now time.Duration) {
	if len(s.tasks) == 0 {
		s.wait(kernelsched.Never, now)
		return
	}
	if busy {
		s.idle = s.cfg.Poll
	} else {
		s.idle = min(max(2*s.idle, s.cfg.Poll), 16*s.cfg.Poll)
	}
	if !s.tpcPerRequest.Load() {
		s.wait(now+s.idle, now)
		return
	}
	// Request-scoped masks: an online hook wakes the loop (its request's
	// start and end are seen at once, not a poll later); the offline
	// ones, which launch far more, do not.
	for _, t := range s.tasks {
		if t.hello.Online {
			t.slot.setSleeping(true)
		}
	}
	for _, t := range s.tasks {
		if t.hello.Online && t.slot.pending() {
			s.awake()
			return
		}
	}
	s.wait(now+s.idle, now)
	s.awake()
}

// sleep waits on the eventfd until a hook or an event wakes the loop, or
// until the core's next timer.
func (s *Server) sleep(until, now time.Duration) {
	for _, t := range s.tasks {
		t.slot.setSleeping(true)
	}
	// A launch published before the flag was seen would not wake us.
	for _, t := range s.tasks {
		if t.slot.pending() {
			s.awake()
			return
		}
	}
	s.wait(until, now)
	s.awake()
}

// wait blocks on the eventfd until it is written or until the given time
// (at most 100 ms).
func (s *Server) wait(until, now time.Duration) {
	wait := 100 * time.Millisecond
	if until != kernelsched.Never && until-now < wait {
		wait = max(until-now, 0)
	}
	s.waits.Add(1)
	ts := unix.NsecToTimespec(int64(wait))
	fds := []unix.PollFd{{Fd: int32(s.wake), Events: unix.POLLIN}}
	_, _ = unix.Ppoll(fds, &ts, nil)
	var b [8]byte
	_, _ = unix.Read(s.wake, b[:])
}

func (s *Server) awake() {
	for _, t := range s.tasks {
		t.slot.setSleeping(false)
	}
}

// profile is the profile of a task key: given at start, or found in the
// profile directory since.
func (s *Server) profile(key string) *kernelsched.TaskProfile {
	if p, ok := s.profiles[key]; ok || s.cfg.ProfileDir == "" || key == "" {
		return p
	}
	p, err := kernelsched.LoadProfileFor(s.cfg.ProfileDir, key)
	if err != nil {
		// Looked for again every second: said once per error.
		if msg := err.Error(); s.profileErrs[key] != msg {
			s.profileErrs[key] = msg
			s.cfg.Log.Warn("kernel scheduler: profile (said again only if the error changes)", "key", key, "err", err)
		}
		return nil
	}
	delete(s.profileErrs, key)
	if p != nil {
		s.profiles[key] = p
		s.cfg.Log.Info("kernel scheduler: profile loaded", "key", key, "runs", p.Runs, "kernels", len(p.Kernels))
	}
	return p
}

// lookForProfiles gives running tasks without a profile the one their
// profiling phase wrote, once a second.
func (s *Server) lookForProfiles(now time.Duration) {
	if s.cfg.ProfileDir == "" || now < s.nextLook {
		return
	}
	s.nextLook = now + time.Second
	for _, t := range s.tasks {
		ct, err := s.core.Task(t.id)
		if err != nil || ct.Spec.Profile != nil {
			continue
		}
		if p := s.profile(t.hello.TaskKey); p != nil {
			if err := s.core.SetProfile(t.id, p); err != nil {
				s.cfg.Log.Warn("kernel scheduler: set profile", "task", t.hello.Name, "err", err)
			}
		}
	}
}
