package kernelsched

import (
	"cmp"
	"slices"
	"time"
)

// guard is mmk's own policy. It starts from what the hardware already
// does: under MPS an offline job runs at client priority 1 (below normal),
// so the GPU's block scheduler prefers the online job's blocks as SMs free
// up. What priority cannot undo is an offline block that already holds an
// SM: an online kernel needing that SM waits for it. guard therefore
// holds only offline kernels whose predicted block time exceeds a
// threshold Tau while an online request runs, and only when the online
// job's measured latency says it must:
//
//   - Requests are what the online job really did: a run begins with its
//     first launch after a synchronisation returned and ends when the next
//     one returns (Scheduler.Synced), so its latency is measured, not
//     predicted.
//   - Alone latency is measured too: one request in ProbeEvery is a probe.
//     Offline launches are held from the end of the request before it, and
//     the probe counts only if the offline work released before had ended
//     by its start (predicted completions); the median of the last probes
//     is the request alone.
//   - Feedback: every adaptEvery requests guard compares the median
//     latency of the last requests with the alone median. Above
//     1+Slack, Tau steps down (free, 512 µs, 256 µs ... 16 µs, every
//     offline kernel held); below 1+Slack/2 it steps back up. At the top
//     (free) offline launches go at once (AtOnce): the hook only observes,
//     which is priority alone.
//   - While a request runs, offline work released and unfinished stays
//     within Inflight (in predicted GPU time; unfinished until the GPU
//     reports the kernel done where the hook observes completions,
//     kernelsched/server, else until predicted); between requests offline
//     kernels longer than Tau go only if they are predicted to end before
//     the next request is due (the mean think time observed).
//   - Progress floor: every offline task earns Floor of the elapsed time
//     as credit (at most floorBurst) and spends its kernels' predicted
//     durations; a held kernel its credit covers goes whatever the rest
//     says, so no offline job starves.
//
// Without an online task every launch goes at once. Tau may be fixed in
// the configuration (GuardConfig.Tau) to map the trade-off.
type guard struct {
	hooks
	cfg      GuardConfig
	services []*service      // by task id; nil: not an online task
	credit   []time.Duration // progress floor, by task id
	last     time.Duration   // when credit was last earned
	step     int             // index into tauSteps
	scratch  []*Task

	// Loosening waits for loosenAfter good adaptations in a row (good),
	// tightening for two bad ones (bad); a loosening that has to be
	// undone at once doubles the wait.
	good, bad, loosenAfter int
	lastLoosened           bool

	probes, probesLost, floored, adapts uint64
	requests, heldRequests              uint64
	// bounded counts the decisions in which the in-flight bound held an
	// offline launch.
	bounded uint64
}

// tauSteps is the ladder the adaptive Tau moves on: Never (hold nothing)
// down to 0 (hold every offline kernel during a request).
var tauSteps = []time.Duration{Never, 512 * time.Microsecond, 256 * time.Microsecond, 128 * time.Microsecond,
	64 * time.Microsecond, 32 * time.Microsecond, 16 * time.Microsecond, 0}

const (
	// adaptEvery is the requests between two adaptations; window the
	// requests and probeWindow the probes whose medians it compares.
	adaptEvery, window, probeWindow = 32, 64, 16
	// minProbes are the probes needed before guard adapts; the first ones
	// come every warmProbeEvery requests.
	minProbes, warmProbeEvery = 3, 16
	// Loosening waits for minLoosen to maxLoosen good adaptations in a row.
	minLoosen, maxLoosen = 2, 32
	// maxDrain is the requests a probe waits for the offline work to end
	// before it is given up.
	maxDrain = 8
	// floorBurst caps the progress floor's credit.
	floorBurst = 20 * time.Millisecond
)

// service is guard's view of an online task.
type service struct {
	lat, alone ring
	inReq      bool
	lastExit   time.Duration
	think      time.Duration // mean think time (exponential, 1/8)
	requests   int
	// probe: 0 none; probeDrain: offline held, waiting for a request that
	// starts with no offline work in flight; probeOn: that request runs.
	probe   int
	drained int // requests waited in probeDrain
}

const (
	probeDrain = 1 + iota
	probeOn
)

func (*guard) Name() string { return "guard" }

func (g *guard) TaskAdded(s *Scheduler, t *Task) {
	g.cfg = s.cfg.Guard
	if g.cfg.Tau != 0 {
		g.step = -1 // fixed
	}
	var sv *service
	if t.Spec.Online {
		sv = &service{lat: newRing(window), alone: newRing(probeWindow)}
	}
	g.services = atID(g.services, t.ID, sv)
	g.credit = atID(g.credit, t.ID, 0)
}

func (g *guard) TaskRemoved(_ *Scheduler, t *Task) { g.services[t.ID] = nil }

// retune takes new parameters live (Scheduler.SetPolicy to guard again):
// a fixed Tau holds from now, an adaptive one starts from holding nothing;
// the services' think times, latencies and probes stay.
func (g *guard) retune(cfg Config) {
	g.cfg = cfg.Guard
	g.step = 0
	if g.cfg.Tau != 0 {
		g.step = -1
	}
	g.good, g.bad = 0, 0
}

// tau is the block-time threshold in force: Never holds nothing, a
// negative value everything.
func (g *guard) tau() time.Duration {
	if g.step < 0 {
		return g.cfg.Tau
	}
	if tauSteps[g.step] == 0 {
		return -1
	}
	return tauSteps[g.step]
}

func (g *guard) Arrived(s *Scheduler, t *Task, l *Launch, _ time.Duration) {
	sv := g.services[t.ID]
	if sv == nil || sv.inReq {
		return
	}
	sv.inReq = true
	// A probe counts only if no offline work is predicted to run into it.
	if sv.probe == probeDrain && g.offlineEnd(s) <= l.Arrived {
		sv.probe = probeOn
	}
	if sv.requests > 0 {
		d := l.Arrived - sv.lastExit
		if sv.think == 0 {
			sv.think = d
		} else {
			sv.think += (d - sv.think) / 8
		}
	}
}

func (g *guard) Synced(s *Scheduler, t *Task, now time.Duration) {
	sv := g.services[t.ID]
	if sv == nil || !sv.inReq {
		return
	}
	sv.inReq = false
	sv.lastExit = now
	sv.requests++
	g.requests++
	if g.tau() != Never {
		g.heldRequests++
	}
	lat := now - t.RunStart()
	switch sv.probe {
	case probeOn:
		sv.alone.add(lat)
		sv.probe = 0
		g.probes++
	case probeDrain:
		// This request started with offline work in flight: not a probe.
		if sv.drained++; sv.drained > maxDrain {
			sv.probe = 0
			g.probesLost++
		}
	default:
		sv.lat.add(lat)
		if sv.requests%adaptEvery == 0 {
			g.adapt(sv)
		}
	}
	every := g.cfg.ProbeEvery
	if sv.alone.n < minProbes {
		every = min(every, warmProbeEvery)
	}
	if sv.probe == 0 && sv.requests%every == 0 && g.hasOffline(s) {
		sv.probe, sv.drained = probeDrain, 0
	}
}

// adapt moves Tau by the latest requests against alone. A request's
// latency moves by more than the slack from one minute to the next on a
// real GPU (docs/results/pareto-h100.md), so a step needs evidence: the
// median of the last requests over the median of the probes must exceed
// 1+Slack by more than the probes' own spread (half their interquartile
// range over their median) in two adaptations in a row to tighten, and
// stay below 1+Slack/2 in loosenAfter adaptations in a row to loosen. A
// loosening undone at the next adaptation doubles that wait, so that guard
// does not swing between two steps.
func (g *guard) adapt(sv *service) {
	if g.step < 0 || sv.alone.n < minProbes || sv.lat.n < adaptEvery {
		return
	}
	alone := sv.alone.median()
	if alone <= 0 {
		return
	}
	if g.loosenAfter == 0 {
		g.loosenAfter = minLoosen
	}
	r := float64(sv.lat.median()) / float64(alone)
	q1, q3 := sv.alone.quartiles()
	noise := float64(q3-q1) / float64(alone) / 2
	switch {
	case r > 1+g.cfg.Slack+noise:
		g.good = 0
		if g.bad++; g.bad < 2 {
			return
		}
		g.bad = 0
		if g.lastLoosened {
			g.loosenAfter = min(2*g.loosenAfter, maxLoosen)
		} else {
			g.loosenAfter = minLoosen
		}
		g.lastLoosened = false
		if g.step < len(tauSteps)-1 {
			g.step++
			g.adapts++
		}
	case r < 1+g.cfg.Slack/2:
		g.bad = 0
		if g.good++; g.good >= g.loosenAfter && g.step > 0 {
			g.step--
			g.adapts++
			g.good = 0
			g.lastLoosened = true
		}
	default:
		g.good, g.bad = 0, 0
	}
}

func (g *guard) hasOffline(s *Scheduler) bool {
	for _, t := range s.tasks {
		if !t.removed && !t.Spec.Online {
			return true
		}
	}
	return false
}

// online reports whether an online task is registered.
func (g *guard) online() bool {
	for _, sv := range g.services {
		if sv != nil {
			return true
		}
	}
	return false
}

// probing reports whether a probe holds offline launches.
func (g *guard) probing() bool {
	for _, sv := range g.services {
		if sv != nil && sv.probe != 0 {
			return true
		}
	}
	return false
}

// AtOnce: online launches always go; offline ones while guard holds none.
func (g *guard) AtOnce(_ *Scheduler, t *Task) bool {
	if t.Spec.Online || !g.online() {
		return true
	}
	return g.tau() == Never && !g.probing()
}

// phase is what the online tasks are doing now.
type phase struct {
	none     bool          // no online task constrains offline work
	probe    bool          // a probe holds every offline launch
	request  bool          // an online request runs
	nextWant time.Duration // between requests: when the next is due
}

func (g *guard) phase(s *Scheduler, now time.Duration) phase {
	ph := phase{none: true, nextWant: Never}
	for id, sv := range g.services {
		if sv == nil {
			continue
		}
		t := s.tasks[id]
		ph.probe = ph.probe || sv.probe != 0
		switch {
		case sv.inReq:
			ph.none, ph.request = false, true
		case sv.requests == 0 || sv.think == 0:
			// Between requests with no think time known yet: as if one ran.
			if t.Active(now) {
				ph.none, ph.request = false, true
			}
		default:
			due := sv.lastExit + sv.think
			// A service idle for long (twice its think time past due) no
			// longer constrains anything.
			if now < due+2*sv.think+time.Millisecond {
				ph.none = false
				ph.nextWant = min(ph.nextWant, due)
			}
		}
	}
	return ph
}

// offlineEnd is the predicted end of the offline work released so far.
func (g *guard) offlineEnd(s *Scheduler) time.Duration {
	var end time.Duration
	for _, t := range s.tasks {
		if !t.removed && !t.Spec.Online && t.Outstanding() > 0 {
			end = max(end, t.lastEnd)
		}
	}
	return end
}

// inflight is the predicted GPU time of t's released, unfinished kernels.
func inflight(t *Task) time.Duration {
	var w time.Duration
	for _, r := range t.out {
		w += r.est.SK
	}
	return w
}

// cost is what a launch is charged: its predicted duration, Epsilon when
// unknown.
func (g *guard) cost(s *Scheduler, l *Launch) time.Duration {
	if l.Est.Known {
		return l.Est.SK
	}
	return s.cfg.Epsilon
}

// allowed reports whether an offline launch may go now, by the phase.
func (g *guard) allowed(s *Scheduler, t *Task, l *Launch, ph phase, now time.Duration) bool {
	tau := g.tau()
	switch {
	case ph.none:
		return true
	case ph.probe:
		return false
	case tau == Never:
		return true
	case ph.request:
		if inflight(t)+g.cost(s, l) > g.cfg.Inflight && t.Outstanding() > 0 {
			g.bounded++
			return false
		}
		return tau >= 0 && l.Est.Known && l.BlockTime(t.smCap) <= tau
	default: // between requests
		if tau >= 0 && l.Est.Known && l.BlockTime(t.smCap) <= tau {
			return true
		}
		return l.Est.Known && max(now, t.lastEnd)+l.Est.SK <= ph.nextWant
	}
}

// earn adds the progress floor's credit for the time since the last call.
func (g *guard) earn(s *Scheduler, now time.Duration) {
	dt := now - g.last
	g.last = now
	if dt <= 0 {
		return
	}
	add := time.Duration(float64(dt) * g.cfg.Floor)
	for _, t := range s.tasks {
		if !t.removed && !t.Spec.Online && t.Pending() > 0 {
			g.credit[t.ID] = min(g.credit[t.ID]+add, floorBurst)
		}
	}
}

func (g *guard) Schedule(s *Scheduler, now time.Duration) time.Duration {
	g.earn(s, now)
	// Online launches go at once.
	for p := range NumPriorities {
		g.scratch = append(g.scratch[:0], s.queues[p]...)
		for _, t := range g.scratch {
			if t.Spec.Online {
				releaseAll(s, t, now, false)
			}
		}
	}
	ph := g.phase(s, now)
	wake := Never
	for p := range NumPriorities {
		g.scratch = append(g.scratch[:0], s.queues[p]...)
		slices.SortFunc(g.scratch, func(a, b *Task) int { return cmp.Compare(a.pending[a.head].Seq, b.pending[b.head].Seq) })
		for _, t := range g.scratch {
			for t.Pending() > 0 {
				l := &t.pending[t.head]
				c := g.cost(s, l)
				ok := g.allowed(s, t, l, ph, now)
				// A probe is short: the floor waits for its end.
				if !ok && !ph.probe && g.credit[t.ID] >= c {
					ok = true
					g.floored++
				}
				if !ok {
					// The floor's credit covers it later.
					if g.cfg.Floor > 0 && !ph.probe {
						wake = min(wake, now+time.Duration(float64(c-g.credit[t.ID])/g.cfg.Floor)+1)
					}
					break
				}
				g.credit[t.ID] = max(g.credit[t.ID]-c, 0)
				s.Release(t, now)
			}
		}
	}
	// Between requests, the next one's due time changes what may go.
	if !ph.none && !ph.request && ph.nextWant > now && ph.nextWant != Never {
		wake = min(wake, ph.nextWant+2*g.thinkMax()+time.Millisecond+1)
	}
	return wake
}

// thinkMax is the longest mean think time of the online tasks.
func (g *guard) thinkMax() time.Duration {
	var m time.Duration
	for _, sv := range g.services {
		if sv != nil {
			m = max(m, sv.think)
		}
	}
	return m
}

// Stats are guard's counters and state for views and benchmarks: tau_us
// is -1 while no offline kernel is held, 0 while every one is held during
// requests.
func (g *guard) Stats() map[string]float64 {
	tau := float64(max(g.tau(), 0)) / 1e3
	if g.tau() == Never {
		tau = -1
	}
	st := map[string]float64{"tau_us": tau, "probes": float64(g.probes), "probes_lost": float64(g.probesLost),
		"floored": float64(g.floored), "adapts": float64(g.adapts), "requests": float64(g.requests),
		"held_requests": float64(g.heldRequests), "bounded": float64(g.bounded)}
	for _, sv := range g.services {
		if sv != nil && sv.alone.n > 0 {
			st["alone_us"] = float64(sv.alone.median()) / 1e3
			st["recent_us"] = float64(sv.lat.median()) / 1e3
			break
		}
	}
	return st
}

// ring keeps the last values added.
type ring struct {
	v    []time.Duration
	n, i int
	tmp  []time.Duration
}

func newRing(size int) ring { return ring{v: make([]time.Duration, size)} }

func (r *ring) add(d time.Duration) {
	r.v[r.i] = d
	r.i = (r.i + 1) % len(r.v)
	r.n = min(r.n+1, len(r.v))
}

// quartiles of the values kept (0, 0 when none).
func (r *ring) quartiles() (q1, q3 time.Duration) {
	if r.n == 0 {
		return 0, 0
	}
	r.tmp = append(r.tmp[:0], r.v[:r.n]...)
	slices.Sort(r.tmp)
	return r.tmp[r.n/4], r.tmp[(3*r.n)/4]
}

// median of the values kept (0 when none).
func (r *ring) median() time.Duration {
	if r.n == 0 {
		return 0
	}
	r.tmp = append(r.tmp[:0], r.v[:r.n]...)
	slices.Sort(r.tmp)
	return r.tmp[r.n/2]
}
