package slo

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is where a service stands against its target.
type State string

// The states of a service.
const (
	// Met: the recent requests are within the target.
	Met State = "met"
	// Missed: the recent requests are not, and the controller tightens.
	Missed State = "missed"
	// NotHeld: missed at the top rung: no restraint mmk has holds it.
	NotHeld State = "not held"
	// Unattainable: the service misses its target even alone.
	Unattainable State = "unattainable"
	// Calibrating: a ratio target whose latency alone is not known yet.
	Calibrating State = "calibrating"
	// Idle: no request in the window.
	Idle State = "idle"
)

// Decision is a change of rung, with its reason.
type Decision struct {
	At       time.Duration
	From, To int
	// Rung is the rung now in force.
	Rung Rung
	// Service is the service that caused it ("" for a step down, which
	// all allow).
	Service string
	Reason  string
}

// ServiceStatus is a service as the controller sees it.
type ServiceStatus struct {
	ID     string
	Target Target
	// Bound in force (0 while calibrating).
	Bound time.Duration
	// Recent is the window now judged; Total every request so far.
	Recent      Stats
	Total, Late uint64
	// Alone is the latency alone at the target's percentile and the
	// requests it rests on (0: not measured).
	Alone  time.Duration
	AloneN int
	// Reported says the service reports its own latencies (judged by
	// them); else the hook measures them.
	Reported bool
	State    State
	// Detail says State in numbers.
	Detail string
	// Futile: not held, and restraining the offline jobs did not help it
	// (a futile climb): its misses make no one climb for a while.
	Futile bool
}

// service is one online job.
type service struct {
	id      string
	tr      *Tracker
	alone   []time.Duration
	aloneAt time.Duration // last alone sample kept
	state   State
	detail  string
	// Until futileUntil, while its load stays near futileRate, restraint
	// does not help it (futileWhy): its misses make no one climb.
	futileUntil time.Duration
	futileRate  float64
	futileWhy   string
	// begun: its first requests came (Config.Start), at begunAt (since
	// the controller started or was Reset).
	begun   bool
	begunAt time.Duration
	// seen, per rung, what its requests showed there last.
	seen []seenMark
	// drainAt is judgedFrom's answer for the change that settled at
	// drainFor; drainFinal: no request yet to end moves it.
	drainFor, drainAt time.Duration
	drainFinal        bool
	// aloneLate is the share of its requests alone past its bound when
	// alone it misses its target (0: it does not); newlyUnattainable: it
	// was found so at the last judgement.
	aloneLate         float64
	newlyUnattainable bool
	// alonePct is the latency alone at its target's percentile that the
	// verdict on aloneLate rests on.
	alonePct time.Duration
	// times, per rung, its service times there (the queue forecast).
	times []serviceTimes
}

// Controller holds the targets of the services of one GPU instance by
// choosing a rung of its ladder for the offline jobs there. It is not
// safe for concurrent use.
type Controller struct {
	cfg      Config
	services []*service // in the order added
	level    int
	// changedAt is when the rung last changed, lastDown whether that
	// was a step down; badAt when a service last missed; swungAt when a
	// change of load last moved the rung.
	changedAt, badAt, lastTick, swungAt time.Duration
	// fellAt is when a fall of load last relaxed the rung; resetAt when
	// the controller was last Reset (services begin again after it).
	fellAt, resetAt   time.Duration
	lastDown, started bool
	calm              time.Duration
	// enterRate is the services' request rate when the rung was climbed
	// to: a fall well below it ends the wait for calm.
	enterRate float64
	// climb is the run of tightenings under way (nil: none).
	climb *climb
	// rises are the pre-emptions in force, oldest first: a fall of load
	// back to where one began returns to the rung it started from.
	rises []rise
	// probe: while probing, the rung to return to, and when it ends.
	probing    bool
	probeUntil time.Duration
	probeFrom  int
	probeFor   string
	lastProbe  time.Duration
	// fails, per rung, when it last missed (tightening on evidence) and
	// the request rate then: a step down onto it waits (Remember). held,
	// per rung, when it last held every target and the highest request
	// rate it held them at since (lowered to a factor Swing below a miss
	// at or below that rate): a fall of load returns to it at once.
	fails, held []failMark
	// unproven: no miss called for the rung in force: the start rung
	// (Config.Start), or one a pre-emption of a rise climbed to.
	unproven bool
	// trial: the rung in force was stepped down to and has not held
	// every target at the load since (its misses need TrialAlpha).
	trial bool
	// settle is how long after the last change requests are not judged:
	// Config.Settle, or twice the longest latency just before the change
	// (a queue built before it drains after it).
	settle time.Duration
	// alike: per rung but the last, whether it restrains as the one
	// above it does now (SetAlike).
	alike []bool
	// unsuspended: a suspension in force did not stop every offline job
	// (SetSuspended); suspendedAt: when the last one that had failed
	// stopped them all.
	unsuspended bool
	suspendedAt time.Duration
}

// New builds a controller at rung 0.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, calm: cfg.Calm, fails: make([]failMark, len(cfg.Ladder)), held: make([]failMark, len(cfg.Ladder)), settle: cfg.Settle, changedAt: -1 << 62, badAt: -1 << 62, lastTick: -1 << 62, lastProbe: -1 << 62, swungAt: -1 << 62, fellAt: -1 << 62, resetAt: -1 << 62, suspendedAt: -1 << 62}, nil
}

// SetSuspended tells the controller whether every offline job is
// stopped that its rung suspends (true where it suspends none): after its
// rung was applied at now, and, false, when an offline job comes while
// the rung suspends (it runs until the rung is applied). While one runs
// on, requests are not taken for the services alone; once all are
// stopped again, only those that arrive Settle after that are.
func (c *Controller) SetSuspended(all bool, now time.Duration) {
	if c.unsuspended && all {
		c.suspendedAt = now
	}
	c.unsuspended = !all
}

// Reset puts the controller back on rung 0 at now, with its first wait
// for calm; it keeps the services, their requests and what they measured
// alone, and forgets what it remembered of the rungs (Forget).
func (c *Controller) Reset(now time.Duration) {
	c.level, c.changedAt, c.badAt, c.lastDown, c.started = 0, now, -1<<62, false, true
	c.calm, c.enterRate, c.probing, c.climb, c.swungAt = c.cfg.Calm, 0, false, nil, -1<<62
	c.rises, c.fellAt, c.resetAt = nil, -1<<62, now
	c.trial, c.unproven = false, false
	c.settle = c.cfg.Settle
	c.Forget()
	for _, sv := range c.services {
		sv.begun = false
	}
}

// Config is the controller's configuration, defaults filled in.
func (c *Controller) Config() Config { return c.cfg }

// Ladder is the controller's ladder, which never changes: safe to read
// while another goroutine sets its aim (SetAim), unlike Config.
func (c *Controller) Ladder() Ladder { return c.cfg.Ladder }

// SetAim changes the share of each target's budget the controller aims
// for (Config.Aim), from its next step; it refuses one outside (0, 1].
func (c *Controller) SetAim(aim float64) error {
	if err := CheckAim(aim); err != nil {
		return fmt.Errorf("slo controller: %w", err)
	}
	c.cfg.Aim = aim
	return nil
}

// Level is the rung in force.
func (c *Controller) Level() int { return c.level }

// Rung is the restraint in force.
func (c *Controller) Rung() Rung { return c.cfg.Ladder[c.level] }

// SetAlike tells the controller which rungs restrain as the rung above
// them does now (Ladder.Alike: "tpcs=0.75@1" beside a single trainer
// that can mask is "tpcs=0.75"): a climb passes over the rungs alike to
// the one it leaves, a step down over those alike to the one it leaves,
// rather than wait for evidence on a rung where nothing changed. nil
// (the start): no rung is alike. The slice is kept.
func (c *Controller) SetAlike(alike []bool) { c.alike = alike }

// isAlike reports whether rung i restrains as rung i+1 does now.
func (c *Controller) isAlike(i int) bool { return i >= 0 && i < len(c.alike) && c.alike[i] }

// same reports whether rungs a and b, and every one between them,
// restrain alike now (a rung is alike to itself).
func (c *Controller) same(a, b int) bool {
	for i := min(a, b); i < max(a, b); i++ {
		if !c.isAlike(i) {
			return false
		}
	}
	return true
}

// up is the rung a climb from the one in force goes to (above).
func (c *Controller) up() int { return c.above(c.level) }

// above is the next rung over rung i that restrains more than it (the
// top at most; callers climb only where one does, !same(i, top)).
func (c *Controller) above(i int) int {
	top := len(c.cfg.Ladder) - 1
	j := i + 1
	for j < top && c.isAlike(j-1) {
		j++
	}
	return min(j, top)
}

// down is the rung a step down from the one in force goes to: the next
// one below that restrains less, the lowest of the rungs alike to it (as
// a climb reaches them first; 0 at least; callers step down only where
// one does, !same(0, level)).
func (c *Controller) down() int {
	j := c.level - 1
	for j > 0 && c.isAlike(j) {
		j--
	}
	for j > 0 && c.isAlike(j-1) {
		j--
	}
	return max(j, 0)
}

// Probing reports whether the controller is measuring a service alone.
func (c *Controller) Probing() bool { return c.probing }

// AddService starts tracking an online job with a target (a zero target:
// measured and shown, never protected). Adding an id again replaces it.
func (c *Controller) AddService(id string, t Target) {
	c.RemoveService(id)
	c.Forget()
	bound, _ := t.Resolve(0)
	c.services = append(c.services, &service{id: id, tr: NewTracker(t, bound), state: Idle})
}

// SetTarget changes a service's target, keeping its requests, its
// history and what it measured alone (what the rungs showed of it at
// another percentile is forgotten); an unknown id is added.
func (c *Controller) SetTarget(id string, t Target) {
	sv := c.service(id)
	if sv == nil {
		c.AddService(id, t)
		return
	}
	if t.Percentile != sv.tr.Target().Percentile {
		clear(sv.seen)
	}
	bound, _ := t.Resolve(0)
	sv.tr.SetTarget(t, bound)
	c.calibrate(sv)
}

// RemoveService stops tracking a job.
func (c *Controller) RemoveService(id string) {
	n := len(c.services)
	c.services = slices.DeleteFunc(c.services, func(s *service) bool { return s.id == id })
	if len(c.services) != n {
		c.Forget()
	}
}

// Services are the ids tracked, in the order added.
func (c *Controller) Services() []string {
	out := make([]string, len(c.services))
	for i, s := range c.services {
		out[i] = s.id
	}
	return out
}

func (c *Controller) service(id string) *service {
	for _, s := range c.services {
		if s.id == id {
			return s
		}
	}
	return nil
}

// Observe records a request of a service; alone says that no offline
// job was active beside it (or a probe held them), so that it also
// measures the service alone. Requests of an unknown id are dropped.
func (c *Controller) Observe(id string, s Sample, alone bool) {
	sv := c.service(id)
	if sv == nil {
		return
	}
	if s.Source == Reported && !sv.tr.Reported() {
		// The service's own measure replaces the hook's, alone too.
		sv.alone = sv.alone[:0]
	}
	c.keepServiceTime(sv, s)
	sv.tr.Add(s)
	if arrived := s.At - s.Latency; (c.probing || c.Rung().Suspend && sv.tr.Target().Ratio == 0) && !c.unsuspended &&
		arrived > c.changedAt+min(c.settle, c.cfg.Window) && arrived > c.suspendedAt+c.settle && arrived > c.judgedFrom(sv) {
		// Arrived after the probe's restraint, or a suspension, settled
		// and what queued before it drained (judgedFrom): no offline work
		// ran beside it. What a service with an absolute target misses so
		// is not the offline jobs' doing (a machine that stalls on its
		// own: rounds 38 and 39 on an H100,
		// docs/results/slo-h100-stalls.md). A ratio target's bound is set
		// by probes alone: a suspension's requests, at whatever load
		// called for it, would move it. Not while a suspension failed to
		// stop every offline job (SetSuspended). (judgedFrom is never
		// before the change settled or a Window after it, whichever comes
		// first: a request that came earlier is not asked of it, which
		// would scan the requests kept for each one of a backlog.)
		alone = true
	}
	if alone && (s.Source == Reported || !sv.tr.Reported()) {
		if sv.tr.Target().Ratio == 0 && len(sv.alone) > 0 && s.At-sv.aloneAt >= c.cfg.Remember {
			// Measured alone again after long: afresh (an absolute target
			// is found unattainable on what the service does alone now,
			// not on a stall long gone).
			sv.alone = sv.alone[:0]
		}
		if len(sv.alone) >= Keep {
			sv.alone = sv.alone[1:]
		}
		sv.alone = append(sv.alone, s.Latency)
		sv.aloneAt = s.At
		c.calibrate(sv)
	}
}

// Step judges the services and moves the rung when they say so; it acts
// at most once a Tick. It returns the decision when the rung changed.
func (c *Controller) Step(now time.Duration) (Decision, bool) {
	if now-c.lastTick < c.cfg.Tick {
		return Decision{}, false
	}
	c.lastTick = now
	if !c.started {
		// Nothing is known before the first step: it starts the calm.
		c.started, c.changedAt = true, now
	}
	if c.probing {
		return c.endProbe(now)
	}
	if d, ok := c.start(now); ok {
		return d, true
	}
	var worst, rising *service
	var worstSt Stats
	var swing, riseFrom float64
	worstOver := 0.0
	allWell, allMet, fell := true, true, false
	// heldInFact: every service had enough requests since the change to
	// place its percentile, and no more late than its budget.
	heldInFact := true
	// rate is the services' request rate over the Window; judgedRate
	// over the requests judged since the change (the load the rung in
	// force met, which the memories keep: the Window lags a change).
	rate, judgedRate := 0.0, 0.0
	for _, sv := range c.services {
		// Its requests judged: those of the Window, and those since the
		// change up to Evidence back, that arrived after it settled.
		from := c.judgedFrom(sv)
		win := sv.tr.Judged(now-c.cfg.Window, from, now)
		since := sv.tr.Judged(now-c.cfg.Evidence, from, now)
		c.see(sv, now, since)
		v, over, st := c.judge(sv, now, from, win, since)
		heldInFact = heldInFact && c.heldBy(sv, now, since)
		rate += sv.tr.Window(now-c.cfg.Window, now).Rate
		judgedRate += win.Rate
		allWell = allWell && v == wellWithin
		allMet = allMet && v != missed
		if over > worstOver {
			worst, worstOver, worstSt = sv, over, st
		}
		switch f, before := c.swing(sv, now); {
		case f >= c.cfg.Swing && v != missed && sv.aloneLate == 0 && c.nearing(sv, now, from, v, st) && f > swing:
			// (Past its bound alone, its latency says nothing of nearing it.)
			rising, swing, riseFrom = sv, f, before
		case f > 0 && f <= 1/c.cfg.Swing:
			fell = true
		}
	}
	top := len(c.cfg.Ladder) - 1
	if cl := c.climb; cl != nil && cl.from < c.level {
		if sv := c.service(cl.id); sv != nil && sv.newlyUnattainable {
			// Measured alone on the way up (a suspension), the service
			// misses its target without the offline jobs: its climb was
			// judged against a budget no restraint gives. Back to where it
			// began, the rungs' misses on the way forgotten; from there the
			// offline jobs are held to its budget beyond what it misses
			// alone.
			sv.newlyUnattainable = false
			c.climb, c.badAt = nil, -1<<62
			clear(c.fails[cl.from:])
			return c.move(now, cl.from, sv.id, "relax: "+sv.id+" misses its target alone: "+sv.detail), true
		}
	}
	if worst != nil {
		c.badAt = now
		if c.climb == nil || c.level == 0 {
			c.climb = &climb{id: worst.id, from: c.level, pct: worstSt.Pct}
		}
		if c.same(c.level, top) {
			// Nothing above restrains more.
			return c.atTop(now, worst, worstSt)
		}
		if why, ok := c.topDidNotHelp(worst, worstSt, now); ok {
			return c.giveUp(now, worst, why)
		}
		if c.lastDown && now-c.changedAt < max(c.calm, c.cfg.Evidence) {
			// The last step down did not hold (its misses may take the
			// Evidence span to show): wait longer next time.
			c.calm = min(2*c.calm, c.cfg.MaxCalm)
		}
		c.enterRate = rate
		// The load it missed at: the lower of the two rates (the requests
		// judged since a recent change are few, and their rate noisy; a
		// load kept too high would let the rung be tried again at this one).
		f := failMark{at: now, rate: min(rate, judgedRate), set: true}
		c.fails[c.level] = f
		if h := &c.held[c.level]; h.set && h.rate*c.cfg.Swing > f.rate {
			// It held within Swing of this load (or above it) and missed
			// now: it is taken to hold only a factor Swing below the miss,
			// where refused lets it be stepped onto again.
			h.rate = f.rate / c.cfg.Swing
		}
		return c.move(now, c.up(), worst.id, "tighten: "+worst.id+" "+worst.detail), true
	}
	if allMet && rising == nil && !fell {
		// (A rise is pre-empted, or not, below; the Window's rate lags a
		// fall.)
		if to, sv, why, ok := c.forecastClimb(now); ok {
			// As a tightening, but no rung missed: nothing is refused for it.
			c.enterRate = rate
			if c.climb == nil || c.level == 0 {
				c.climb = &climb{id: sv.id, from: c.level, pct: sv.tr.Window(now-c.cfg.Window, now).Pct}
			}
			return c.move(now, to, sv.id, "tighten: "+why), true
		}
	}
	if r, why, ok := c.lapsed(now); ok && allMet {
		c.rises = c.rises[:len(c.rises)-1]
		c.climb = nil
		// Not onto a rung that missed at this load lately (Remember), nor
		// one predicted to miss at it.
		if r.from < c.level && !c.same(r.from, c.level) && c.mayReturn(r.from, now) {
			return c.move(now, r.from, r.id, "relax: "+why), true
		}
	}
	settled := now-c.changedAt >= c.settle && now-c.swungAt >= c.cfg.Window
	if allMet && heldInFact && rising == nil && !fell && now-c.changedAt >= c.settle+c.cfg.Window {
		// The rung in force holds every target at this load (not while
		// it changes: the requests judged lag it).
		held := min(rate, judgedRate)
		c.trial = false
		if h := &c.held[c.level]; !h.set || now-h.at >= c.cfg.Remember {
			*h = failMark{at: now, rate: held, set: true}
		} else {
			h.at, h.rate = now, max(h.rate, held)
		}
	}
	if rising != nil && settled && !c.same(c.level, top) {
		// Its load rose while it was close to its bound: the misses would
		// come before the evidence of them.
		how, holds := c.forecastHolds(rising, c.level, now)
		if holds {
			// The rung in force is forecast to hold the new load: a
			// pre-emption would restrain for nothing (it is asked again
			// at each step while the rise shows). Misses, if they come,
			// still tighten.
			rising.detail += "; no pre-emption: " + how
			return Decision{}, false
		}
		c.swungAt, c.enterRate = now, rate
		if c.climb == nil || c.climb.id != rising.id {
			// A rise during the service's own climb keeps where the climb
			// began: a futile climb goes back there, not to the rung the
			// rise found.
			c.climb = &climb{id: rising.id, from: c.level, pct: rising.tr.Window(now-c.cfg.Window, now).Pct}
		}
		if how != "" {
			how = "; " + how
		}
		c.rises = append(c.rises, c.newRise(rising, riseFrom, now))
		to, past := c.preemptTo(now)
		d := c.move(now, to, rising.id, fmt.Sprintf("pre-empt: %s's load rose %.1fx over the last %v while %s%s%s",
			rising.id, swing, c.cfg.Short, rising.detail, how, past))
		c.unproven = true
		return d, true
	}
	if fell && allMet && settled && !c.same(0, c.level) && c.belowEntry() {
		// The last rise, if its service's load is gone, is undone with
		// whatever was climbed on top of it while it lasted; the ones
		// before it follow as the load falls back past them (lapsed). A
		// fall of another service's load undoes nothing.
		prev := c.fellAt
		c.fellAt = now
		if r, w, ok := c.lapsed(now); ok && c.same(r.from, c.level) {
			// The rung it began on restrains as the one in force now (a
			// task that could be masked left): the rise is over, and
			// nothing below is stepped onto for it.
			c.rises = c.rises[:len(c.rises)-1]
		} else if ok && c.mayReturn(min(c.down(), r.from), now) {
			c.swungAt, c.calm, c.climb = now, c.cfg.Calm, nil
			c.rises = c.rises[:len(c.rises)-1]
			return c.move(now, min(c.down(), r.from), "", fmt.Sprintf("relax: the load fell (request rate %.1f/s) and every service is within its target: %s", rate, w)), true
		}
		c.fellAt = prev
	}
	if fell && allMet && settled && !c.same(0, c.level) && c.enterRate > 0 && rate < c.enterRate/c.cfg.Swing {
		// The load fell well below the one the rung was climbed for: back
		// to the cheapest rung that held every target at this load or a
		// higher one lately, if none below it missed at this load.
		if to, ok := c.heldBelow(now, rate); ok {
			c.swungAt, c.calm, c.climb, c.enterRate = now, c.cfg.Calm, nil, 0
			h := c.held[to]
			return c.move(now, to, "", fmt.Sprintf("relax: the load fell (request rate %.1f/s) and %s held every target at %.1f/s %v ago",
				rate, c.cfg.Ladder[to], h.rate, (now-h.at).Round(time.Second))), true
		}
	}
	if sv := c.needsProbe(now); sv != nil {
		c.probing, c.probeFrom, c.probeFor = true, c.level, sv.id
		d := c.move(now, top, sv.id, "")
		c.probeUntil, c.lastProbe = now+c.settle+c.cfg.Probe, now
		why := fmt.Sprintf("has a ratio target (%s) and no latency alone yet", sv.tr.Target())
		if sv.tr.Target().Ratio == 0 {
			why = fmt.Sprintf("was past its target alone (%.1f %% late) %v ago: is it still?", 100*sv.aloneLate, (now - sv.aloneAt).Round(time.Second))
		}
		d.Reason += fmt.Sprintf("probe: %s %s; offline work held for %v", sv.id, why, c.settle+c.cfg.Probe)
		return d, true
	}
	if c.same(0, c.level) || !allMet {
		return Decision{}, false
	}
	// A load well below the one the rung was climbed for ends the wait.
	calm := c.calm
	below := c.enterRate > 0 && rate < c.enterRate/2
	if below {
		calm = c.cfg.Calm
		c.calm = c.cfg.Calm
	}
	since := max(c.changedAt, c.badAt)
	// Well within every target, a calm spell allows a step down; merely
	// within them, four: the rung may be what holds them. Not so on a
	// rung no miss called for (the start rung, a pre-emption's), nor on
	// one climbed for a load twice the one now: the step down is a trial
	// (TrialAlpha); nor onto a rung that held every target at this load
	// lately.
	to := c.down()
	if !allWell && !c.unproven && !below && !c.heldAt(to, now, rate) {
		calm *= 4
	}
	if now-since < calm || c.refused(to, now, rate) || c.waitsForPrediction(to, now, false, rate) {
		return Decision{}, false
	}
	if c.lastDown && now-c.changedAt >= 2*c.calm {
		// The last step down held for long: the wait goes back down.
		c.calm = c.cfg.Calm
	}
	how := "well within"
	if !allWell {
		how = "within"
	}
	c.climb = nil
	return c.move(now, to, "", fmt.Sprintf("relax: every service %s its target for %v (request rate %.1f/s)", how, (now-since).Round(time.Millisecond), rate)), true
}

// start moves to Config.Start when a service with a target sends its
// first requests (since the last Reset) and the instance is below it.
func (c *Controller) start(now time.Duration) (Decision, bool) {
	to := c.cfg.Start
	if to <= 0 || to >= len(c.cfg.Ladder) || c.cfg.Ladder[to].Suspend || c.cfg.Ladder[to].HoldAll {
		to = 0
	}
	for _, sv := range c.services {
		t := sv.tr.Target()
		if sv.begun || t.IsZero() || sv.tr.Window(max(now-c.cfg.Window, c.resetAt), now).N == 0 {
			continue
		}
		sv.begun, sv.begunAt = true, now
		if c.level < to {
			c.climb, c.enterRate = nil, 0
			d := c.move(now, to, sv.id, fmt.Sprintf("start: %s has a target (%s); offline work restrained until its requests show room", sv.id, t))
			c.unproven = true
			return d, true
		}
	}
	return Decision{}, false
}

// move changes the rung.
func (c *Controller) move(now time.Duration, to int, id, reason string) Decision {
	d := Decision{At: now, From: c.level, To: to, Rung: c.cfg.Ladder[to], Service: id,
		Reason: fmt.Sprintf("%s -> %s: %s", c.cfg.Ladder[c.level], c.cfg.Ladder[to], reason)}
	c.lastDown = to < c.level
	c.trial, c.unproven = false, false
	if to < c.level {
		rate := 0.0
		for _, sv := range c.services {
			rate += sv.tr.Window(now-c.cfg.Window, now).Rate
		}
		c.trial = !c.heldAt(to, now, rate)
		// A rise begun on this rung or above it is over.
		c.rises = slices.DeleteFunc(c.rises, func(r rise) bool { return r.from >= to })
	}
	c.level, c.changedAt = to, now
	// A queue that built up before the change drains after it: its
	// requests would be judged against the new rung.
	longest := time.Duration(0)
	for _, sv := range c.services {
		longest = max(longest, sv.tr.Window(now-c.cfg.Short, now).Max)
	}
	c.settle = min(max(c.cfg.Settle, 2*longest), c.cfg.Window)
	return d
}

// Status is every service's standing at now, in the order added.
func (c *Controller) Status(now time.Duration) []ServiceStatus {
	out := make([]ServiceStatus, 0, len(c.services))
	for _, sv := range c.services {
		t := sv.tr.Target()
		st := ServiceStatus{ID: sv.id, Target: t, Bound: sv.tr.Bound(), Recent: sv.tr.Window(now-c.cfg.Window, now),
			State: sv.state, Detail: sv.detail, Futile: sv.futile(now), AloneN: len(sv.alone), Reported: sv.tr.Reported()}
		st.Total, st.Late = sv.tr.Total()
		if len(sv.alone) > 0 {
			st.Alone = aloneAt(sv.alone, cmp.Or(t.Percentile, 99))
		}
		out = append(out, st)
	}
	return out
}

// History is a service's points over time (nil for an unknown id).
func (c *Controller) History(id string, now time.Duration) []Point {
	if sv := c.service(id); sv != nil {
		return sv.tr.History(now)
	}
	return nil
}

// roundMs rounds a latency for reasons people read.
func roundMs(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Summary is a one-line account of the services, for logs.
func Summary(st []ServiceStatus) string {
	var b strings.Builder
	for i, s := range st {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s (%s)", s.ID, s.State, s.Detail)
	}
	return b.String()
}
