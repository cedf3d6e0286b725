package slo

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Config tunes a Controller. Zero fields take DefaultConfig's.
type Config struct {
	// Ladder is the rungs climbed, cheapest first.
	Ladder Ladder
	// Tick is the least time between two decisions.
	Tick time.Duration
	// Window is how far back a service's requests are judged.
	Window time.Duration
	// Evidence is how far back, since the last change of rung, misses are
	// also counted (at least Window): a service of a few requests a second late a few
	// times in a hundred never has the evidence within one Window (three
	// late of the 40 requests of 5 s at 8/s), but has it over a minute.
	Evidence time.Duration
	// Settle: requests that ended within Settle of a change are not
	// judged (the offline work released before it is still on the GPU).
	Settle time.Duration
	// Calm is how long every service must stay well within its target
	// before the controller steps down; a step down undone within Calm
	// doubles it, up to MaxCalm.
	Calm, MaxCalm time.Duration
	// Headroom: a service is well within its target while its latency at
	// the target's percentile is at most (1-Headroom) times the bound.
	Headroom float64
	// MinSamples is the requests a service needs in a window before its
	// percentile is trusted to step down.
	MinSamples int
	// Alpha is the evidence a miss needs: the controller tightens when a
	// service meeting its target exactly (late with probability its
	// budget) would have had as many late requests in the window with
	// probability below Alpha.
	Alpha float64
	// Aim is the share of a target's budget the controller aims for: a
	// miss is a late fraction above Aim times the budget, on evidence
	// (Alpha). Below 1 it keeps a margin: a rung that leaks at the budget
	// itself is found short before its phase ends (a p99 judged on a few
	// hundred requests passes or fails on two or three of them), at the
	// price of some climbs a rung leaking just below the budget did not
	// need. 0 takes the default (1); at most 1.
	Aim float64
	// TrialAlpha is the evidence a miss needs on a rung stepped down to
	// that has not held every target at this load lately (Remember): the
	// step is a trial, and a few late requests end it before they use up
	// the budget of a phase (at a 1 % budget, two late of the first 40).
	TrialAlpha float64
	// MinAlone is the requests measured alone that set a ratio target's
	// bound, or find an absolute one unattainable.
	MinAlone int
	// Probe is how long the controller holds the top rung to measure a
	// service alone that has a ratio target and no latency alone yet;
	// ProbeEvery the least time between two probes.
	Probe, ProbeEvery time.Duration
	// FutileFor is how long a service whose misses the top rung did not
	// help is left alone (unless its load changes by half or more).
	FutileFor time.Duration
	// A service's load has changed when its arrival rate over the last
	// Short differs from its rate over the Window before by a factor of
	// Swing or more, and the counts show it (a difference that steady
	// Poisson arrivals give with probability SwingAlpha or more is noise): a
	// rise tightens at once a service that is within its target but close
	// to it (before the misses come that would prove it late), a fall
	// relaxes at once if every service is within its target, back to the
	// rung held before the rises it undoes.
	Short time.Duration
	Swing float64
	// SwingAlpha is the evidence a change of load needs: steady Poisson
	// arrivals split between the two spans at least as unevenly with
	// probability below it. As the spans slide at every Tick, a burst of a
	// steady load passes it now and then: a rise is checked a Window
	// after its pre-emption, and undone if it did not last.
	SwingAlpha float64
	// Start is the rung an instance goes to when a service with a target
	// sends its first requests, unless the instance is higher already or
	// the rung holds every offline launch or suspends (too dear to pay
	// before a need shows): a service starts protected, and the controller
	// steps down once its requests show room, rather than let the misses
	// that would prove the need come first (at 8 requests a second, a
	// climb needs some 10 s of them). 0 takes the default (1); a negative
	// Start keeps rung 0.
	Start int
	// Remember is how long a rung that missed stays refused while the
	// load is not well below (a factor Swing) the one it missed at: a
	// step down onto it costs the misses that proved it short again.
	Remember time.Duration
}

// DefaultConfig suits services of a few to a few hundred requests a
// second.
func DefaultConfig() Config {
	return Config{
		Ladder:     DefaultLadder(),
		Tick:       500 * time.Millisecond,
		Window:     5 * time.Second,
		Evidence:   time.Minute,
		Settle:     500 * time.Millisecond,
		Calm:       5 * time.Second,
		MaxCalm:    80 * time.Second,
		Headroom:   0.3,
		MinSamples: 20,
		Alpha:      0.01,
		Aim:        1,
		TrialAlpha: 0.1,
		MinAlone:   50,
		Probe:      3 * time.Second,
		ProbeEvery: 10 * time.Minute,
		FutileFor:  time.Minute,
		Short:      2 * time.Second,
		Swing:      1.6,
		SwingAlpha: 0.02,
		Start:      1,
		Remember:   5 * time.Minute,
	}
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if len(c.Ladder) == 0 {
		c.Ladder = d.Ladder
	}
	for _, p := range []*time.Duration{&c.Tick, &c.Window, &c.Evidence, &c.Settle, &c.Calm, &c.MaxCalm, &c.Probe, &c.ProbeEvery, &c.FutileFor, &c.Short, &c.Remember} {
		if *p < 0 {
			return c, fmt.Errorf("slo controller: negative duration %v", *p)
		}
	}
	orZero(&c.Tick, d.Tick)
	orZero(&c.Window, d.Window)
	orZero(&c.Evidence, d.Evidence)
	c.Evidence = max(c.Evidence, c.Window)
	orZero(&c.Settle, d.Settle)
	orZero(&c.Calm, d.Calm)
	orZero(&c.MaxCalm, d.MaxCalm)
	orZero(&c.Headroom, d.Headroom)
	orZero(&c.MinSamples, d.MinSamples)
	orZero(&c.Alpha, d.Alpha)
	orZero(&c.Aim, d.Aim)
	orZero(&c.TrialAlpha, d.TrialAlpha)
	orZero(&c.MinAlone, d.MinAlone)
	orZero(&c.Probe, d.Probe)
	orZero(&c.ProbeEvery, d.ProbeEvery)
	orZero(&c.FutileFor, d.FutileFor)
	orZero(&c.Short, d.Short)
	orZero(&c.Swing, d.Swing)
	orZero(&c.SwingAlpha, d.SwingAlpha)
	orZero(&c.Start, d.Start)
	orZero(&c.Remember, d.Remember)
	switch {
	case c.Alpha <= 0 || c.Alpha >= 1:
		return c, fmt.Errorf("slo controller: alpha %v is not in (0, 1)", c.Alpha)
	case !(c.Aim > 0 && c.Aim <= 1):
		return c, fmt.Errorf("slo controller: aim %v is not in (0, 1]", c.Aim)
	case c.TrialAlpha <= 0 || c.TrialAlpha >= 1:
		return c, fmt.Errorf("slo controller: trial alpha %v is not in (0, 1)", c.TrialAlpha)
	case c.SwingAlpha <= 0 || c.SwingAlpha >= 1:
		return c, fmt.Errorf("slo controller: swing alpha %v is not in (0, 1)", c.SwingAlpha)
	case c.Headroom < 0 || c.Headroom >= 1:
		return c, fmt.Errorf("slo controller: headroom %v is not in [0, 1)", c.Headroom)
	case c.Swing <= 1:
		return c, fmt.Errorf("slo controller: swing %v must be above 1", c.Swing)
	case c.MinSamples < 1 || c.MinAlone < 1:
		return c, fmt.Errorf("slo controller: min samples %d and min alone %d must be at least 1", c.MinSamples, c.MinAlone)
	case c.MaxCalm < c.Calm:
		return c, fmt.Errorf("slo controller: max calm %v is below calm %v", c.MaxCalm, c.Calm)
	}
	return c, nil
}

func orZero[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

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
}

// failMark is a rung's last miss: when, and the services' request rate.
type failMark struct {
	at   time.Duration
	rate float64
	set  bool
}

// New builds a controller at rung 0.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, calm: cfg.Calm, fails: make([]failMark, len(cfg.Ladder)), held: make([]failMark, len(cfg.Ladder)), settle: cfg.Settle, changedAt: -1 << 62, badAt: -1 << 62, lastTick: -1 << 62, lastProbe: -1 << 62, swungAt: -1 << 62, fellAt: -1 << 62, resetAt: -1 << 62}, nil
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
	if !(aim > 0 && aim <= 1) {
		return fmt.Errorf("slo controller: aim %v is not in (0, 1]", aim)
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
	sv.tr.Add(s)
	if (c.probing || c.Rung().Suspend && sv.tr.Target().Ratio == 0) && s.At-s.Latency > c.judgedFrom(sv) {
		// Arrived after the probe's restraint, or a suspension, settled
		// and what queued before it drained (judgedFrom): no offline work
		// ran beside it. What a service with an absolute target misses so
		// is not the offline jobs' doing (a machine that stalls on its
		// own: rounds 38 and 39 on an H100,
		// docs/results/slo-h100-stalls.md). A ratio target's bound is set
		// by probes alone: a suspension's requests, at whatever load
		// called for it, would move it.
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

// calibrate sets a ratio target's bound once enough requests ran alone.
func (c *Controller) calibrate(sv *service) {
	t := sv.tr.Target()
	if t.IsZero() || len(sv.alone) < c.cfg.MinAlone {
		return
	}
	if t.Ratio != 0 {
		a := aloneAt(sv.alone, t.Percentile)
		b, _ := t.Resolve(a)
		sv.tr.SetBound(b)
	}
}

// aloneAt is the latency alone at percentile p.
func aloneAt(v []time.Duration, p float64) time.Duration {
	s := slices.Clone(v)
	slices.Sort(s)
	return Quantile(s, p)
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
		c.swungAt, c.enterRate = now, rate
		if c.climb == nil || c.climb.id != rising.id {
			// A rise during the service's own climb keeps where the climb
			// began: a futile climb goes back there, not to the rung the
			// rise found.
			c.climb = &climb{id: rising.id, from: c.level, pct: rising.tr.Window(now-c.cfg.Window, now).Pct}
		}
		c.rises = append(c.rises, c.newRise(rising, riseFrom, now))
		to, past := c.preemptTo(now)
		d := c.move(now, to, rising.id, fmt.Sprintf("pre-empt: %s's load rose %.1fx over the last %v while %s%s",
			rising.id, swing, c.cfg.Short, rising.detail, past))
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

// refused reports whether rung to missed within Remember at a request
// rate not well above rate.
func (c *Controller) refused(to int, now time.Duration, rate float64) bool {
	f := c.fails[to]
	return f.set && now-f.at < c.cfg.Remember && rate*c.cfg.Swing > f.rate
}

// swing is how a service's arrival rate over the last Short compares
// with its rate over the Window before, or since the last swing that
// moved the rung (one change of load moves it once), or since its first
// request, or since it began (start: the idle time before it, as after
// a Reset, is no load that rose), and that earlier rate (requests a
// second); 0: too little history to say; 1: a difference the counts do
// not show (given the requests in both spans, a steady Poisson stream
// splits them at least as unevenly with probability SwingAlpha or
// more).
func (c *Controller) swing(sv *service, now time.Duration) (ratio, before float64) {
	if sv.tr.Target().IsZero() {
		return 0, 0
	}
	from := max(now-c.cfg.Short-c.cfg.Window, c.swungAt, sv.tr.Oldest(), sv.begunAt)
	span := now - c.cfg.Short - from
	if span < c.cfg.Short {
		return 0, 0
	}
	nShort, nBefore := sv.tr.Arrivals(now-c.cfg.Short, now), sv.tr.Arrivals(from, now-c.cfg.Short)
	if nBefore == 0 || nBefore < c.cfg.MinSamples/2 || nShort+nBefore < c.cfg.MinSamples {
		return 0, 0
	}
	before = float64(nBefore) / span.Seconds()
	ratio = float64(nShort) / c.cfg.Short.Seconds() / before
	p := c.cfg.Short.Seconds() / (c.cfg.Short + span).Seconds()
	n := nShort + nBefore
	if ratio >= 1 && BinomialTail(n, nShort, p) >= c.cfg.SwingAlpha || ratio < 1 && BinomialTail(n, nBefore, 1-p) >= c.cfg.SwingAlpha {
		return 1, before
	}
	return ratio, before
}

// belowEntry reports whether a fall of load may relax the rung at once:
// only a pre-emption of a rise is undone so. A rung climbed on misses
// waits for calm: a lull of a steady load looks like a fall now and then
// (at 8 requests a second, 2 s hold 16 on average and 10 or fewer one
// time in thirteen).
func (c *Controller) belowEntry() bool { return len(c.rises) > 0 }

// shortRates is the services' arrival rate over the last Short, summed.
func (c *Controller) shortRates(now time.Duration) float64 {
	rate := 0.0
	for _, sv := range c.services {
		rate += c.shortRate(sv, now)
	}
	return rate
}

// shortRate is a service's arrival rate over the last Short.
func (c *Controller) shortRate(sv *service, now time.Duration) float64 {
	return float64(sv.tr.Arrivals(now-c.cfg.Short, now)) / c.cfg.Short.Seconds()
}

// rise is a pre-emption in force: the service whose load rose, its
// arrival rate before the rise (over the Window before it, and over four
// Windows: a lull of a steady load makes the first low), its rate at the
// rise, the rung it started from, when it was made and whether it has
// lasted a Window since (checked).
type rise struct {
	id                  string
	before, long, after float64
	from                int
	at                  time.Duration
	checked             bool
}

// newRise records a pre-emption of sv's rise from the rate before at now.
func (c *Controller) newRise(sv *service, before float64, now time.Duration) rise {
	r := rise{id: sv.id, before: before, long: before, after: c.shortRate(sv, now), from: c.level, at: now}
	from := max(now-c.cfg.Short-4*c.cfg.Window, sv.tr.Oldest())
	if span := now - c.cfg.Short - from; span > c.cfg.Window {
		r.long = float64(sv.tr.Arrivals(from, now-c.cfg.Short)) / span.Seconds()
	}
	return r
}

// lapsed is the last rise if it is over: a Window after it, its
// service's arrival rate since is below Swing times the longer rate
// before it (a burst of a steady load, or a rise too small to pre-empt;
// a rise that lasted is checked and stays); or within a Window of a fall of load, the service's
// rate over the last Short is back below the middle of the rise. It says
// why.
func (c *Controller) lapsed(now time.Duration) (rise, string, bool) {
	if len(c.rises) == 0 {
		return rise{}, "", false
	}
	r := &c.rises[len(c.rises)-1]
	sv := c.service(r.id)
	if sv == nil {
		return *r, fmt.Sprintf("%s is gone", r.id), true
	}
	if c.fellAt > r.at && now-c.fellAt <= c.cfg.Window && now-c.changedAt >= c.cfg.Settle {
		if rate := c.shortRate(sv, now); rate <= math.Sqrt(r.before*r.after) {
			return *r, fmt.Sprintf("the load fell back: %s at %.1f requests/s, %.1f/s before its rise", r.id, rate, r.before), true
		}
	}
	if r.checked || now-r.at < c.cfg.Window {
		return rise{}, "", false
	}
	since := float64(sv.tr.Arrivals(r.at, now)) / (now - r.at).Seconds()
	if since < r.long*c.cfg.Swing {
		return *r, fmt.Sprintf("the rise of %s's load did not last: %.1f requests/s since it against %.1f/s before", r.id, since, r.long), true
	}
	r.checked = true
	return rise{}, "", false
}

// climb is a run of tightenings: the rung it started from and the
// latency of the service that started it, at its target's percentile.
type climb struct {
	id   string
	from int
	pct  time.Duration
}

// atTop handles a service still missing its target at the top rung: if
// the climb helped it (its latency fell by a tenth or more), the top rung
// stays and the service is said not held; if it did not, the misses are
// not the offline jobs' doing (giveUp).
func (c *Controller) atTop(now time.Duration, sv *service, st Stats) (Decision, bool) {
	cl := c.climb
	if cl == nil || cl.id != sv.id || st.N < c.cfg.MinSamples || float64(st.Pct) < 0.9*float64(cl.pct) {
		sv.state = NotHeld
		sv.detail = fmt.Sprintf("%s at the top rung (%s)", sv.detail, c.Rung())
		return Decision{}, false
	}
	return c.giveUp(now, sv, fmt.Sprintf("p%g %v at %s against %v at %s: restraining the offline jobs does not help it",
		sv.tr.Target().Percentile, roundMs(st.Pct), c.Rung(), roundMs(cl.pct), c.cfg.Ladder[cl.from]))
}

// topDidNotHelp reports whether the top rung was seen lately at about
// sv's load now (within futileLoad either way) with its latency at the
// percentile no more than a tenth below st's: a climb would not help it.
// A machine that stalls on its own makes every rung miss alike, and each
// time a service is judged again its misses would climb to the top anew
// (round 17 on an H100, docs/results/slo-h100-predict.md). It says why.
func (c *Controller) topDidNotHelp(sv *service, st Stats, now time.Duration) (string, bool) {
	top := len(c.cfg.Ladder) - 1
	if st.N < c.cfg.MinSamples || len(sv.seen) <= top {
		return "", false
	}
	m := sv.seen[top]
	rate := sv.tr.Window(now-c.cfg.Window, now).Rate
	if !m.set || now-m.at >= c.cfg.Remember || m.rate*futileLoad < rate || m.rate > rate*futileLoad || float64(m.pct) < 0.9*float64(st.Pct) {
		return "", false
	}
	return fmt.Sprintf("p%g %v at %s, and %v at %s %v ago at %.1f requests/s: restraining the offline jobs does not help it",
		sv.tr.Target().Percentile, roundMs(st.Pct), c.Rung(), roundMs(m.pct), c.cfg.Ladder[top], (now - m.at).Round(time.Second), m.rate), true
}

// futileLoad is how far a service's load may move and a futile climb
// still count as futile at it.
const futileLoad = 1.5

// giveUp ends a climb that does not help sv (why): the controller goes
// back to where sv's climb started, if it is above it (another service's
// climb stays), and leaves sv alone until its load changes or FutileFor
// passes.
func (c *Controller) giveUp(now time.Duration, sv *service, why string) (Decision, bool) {
	from := c.level
	if c.climb != nil && c.climb.id == sv.id {
		from = c.climb.from
	}
	sv.futileUntil, sv.futileRate = now+c.cfg.FutileFor, sv.tr.Window(now-c.cfg.Window, now).Rate
	sv.futileWhy = why
	sv.state, sv.detail = NotHeld, why
	if from == c.level {
		// Nothing climbed for it: its misses just now called for nothing.
		if c.climb != nil && c.climb.id == sv.id {
			c.climb = nil
		}
		return Decision{}, false
	}
	c.climb = nil
	c.badAt = -1 << 62
	// Its misses on the way up were not the offline jobs' doing.
	clear(c.fails[from:])
	return c.move(now, from, sv.id, "futile: "+sv.id+" "+why), true
}

// verdict is a service's standing in a window, as the controller acts
// on it.
type verdict int

const (
	// wellWithin: within its target with room (or nothing to hold).
	wellWithin verdict = iota
	// within: within its target, close to it.
	within
	// missed: past it, on evidence.
	missed
)

// judge looks at one service's requests judged, those that arrived after
// arrived (judgedFrom; st: the Window's; long: those since the change,
// up to Evidence back): its verdict, how far it
// is past its target (0: not past it) and the requests that say so.
func (c *Controller) judge(sv *service, now, arrived time.Duration, st, long Stats) (verdict, float64, Stats) {
	t := sv.tr.Target()
	bound := sv.tr.Bound()
	switch {
	case t.IsZero():
		sv.state, sv.detail = Met, "no target"
		return wellWithin, 0, st
	case bound == 0:
		sv.state, sv.detail = Calibrating, fmt.Sprintf("%d of %d requests alone measured for %s", len(sv.alone), c.cfg.MinAlone, t)
		return wellWithin, 0, st
	}
	was := sv.aloneLate
	un := c.unattainable(sv, now)
	sv.newlyUnattainable = un && was == 0
	v, over, judged := c.judgeAgainst(sv, now, arrived, st, long)
	if un {
		// Alone it misses its target: the offline jobs are held to add no
		// more late requests than its budget to those it has alone.
		sv.state = Unattainable
		d := fmt.Sprintf("p%g alone %v > bound %v (%d requests alone, %.1f %% late)",
			t.Percentile, roundMs(aloneAt(sv.alone, t.Percentile)), bound, len(sv.alone), 100*sv.aloneLate)
		if b := c.budget(sv); b < 1 {
			d += fmt.Sprintf("; held to %.1f %% late: %s", 100*b, sv.detail)
		}
		sv.detail = d
	}
	return v, over, judged
}

// unattainable reports whether sv's absolute target is past what it
// does alone (MinAlone requests alone): its percentile alone past the
// bound, and more of them late than its budget on evidence (Alpha: one
// late of 50 alone is no proof that a p99 is out of reach). It sets
// sv.aloneLate: the share of those requests past the bound (0:
// attainable). A verdict whose requests alone are older than Remember
// stands until a probe measures the service alone again (needsProbe),
// which starts its requests alone afresh (Observe).
func (c *Controller) unattainable(sv *service, now time.Duration) bool {
	t, bound := sv.tr.Target(), sv.tr.Bound()
	n := len(sv.alone)
	if t.Ratio != 0 || bound == 0 || n < c.cfg.MinAlone {
		sv.aloneLate = 0
		return false
	}
	if now-sv.aloneAt >= c.cfg.Remember {
		return sv.aloneLate > 0
	}
	sv.aloneLate = 0
	if aloneAt(sv.alone, t.Percentile) <= bound {
		return false
	}
	late := 0
	for _, l := range sv.alone {
		if l > bound {
			late++
		}
	}
	if BinomialTail(n, late, t.Budget()) >= c.cfg.Alpha {
		return false
	}
	sv.aloneLate = float64(late) / float64(n)
	return true
}

// budget is the share of sv's requests that may be late: its target's,
// and, for a target it misses alone, the share late alone besides.
func (c *Controller) budget(sv *service) float64 {
	return sv.tr.Target().Budget() + sv.aloneLate
}

// judgeAgainst is judge's verdict of a service with a target and a
// bound, against its budget (Controller.budget).
func (c *Controller) judgeAgainst(sv *service, now, arrived time.Duration, st, long Stats) (verdict, float64, Stats) {
	t, bound := sv.tr.Target(), sv.tr.Bound()
	if sv.futileUntil > now {
		if r := sv.tr.Window(now-c.cfg.Window, now).Rate; r <= futileLoad*sv.futileRate && r >= sv.futileRate/futileLoad {
			sv.state, sv.detail = NotHeld, sv.futileWhy
			return wellWithin, 0, st
		}
		sv.futileUntil = 0 // its load changed: judged again
	}
	if st.N == 0 {
		sv.state, sv.detail = Idle, "no request in the window"
		return wellWithin, 0, st
	}
	desc := fmt.Sprintf("p%g %v against %v over %d requests, %d late", t.Percentile, roundMs(st.Pct), bound, st.N, st.Late)
	if p, ok := c.evidence(st, sv); ok {
		sv.state, sv.detail = Missed, desc
		return missed, -math.Log(p), st
	}
	// Misses too few for a Window may be many since the rung changed.
	room := st
	if long.N > st.N {
		if p, ok := c.evidence(long, sv); ok {
			sv.state, sv.detail = Missed, fmt.Sprintf("%d of %d requests late since %v ago (p%g %v against %v)",
				long.Late, long.N, (now-max(now-c.cfg.Evidence, arrived)).Round(time.Second), t.Percentile, roundMs(long.Pct), bound)
			return missed, -math.Log(p), long
		}
		room = long
	}
	sv.state, sv.detail = Met, desc
	// Room is judged on enough requests to place the percentile (100 for
	// a p99: fewer put their largest there), over the span since the
	// rung changed where the window has too few.
	// Or, on fewer, with none of them past twice the headroom.
	need := c.placesPercentile(t)
	h := c.cfg.Headroom
	if sv.aloneLate > 0 {
		// Past its bound alone, its percentile never has room: room is no
		// more late requests than alone and half its budget.
		if float64(room.Late) <= (sv.aloneLate+t.Budget()/2)*float64(room.N) && room.N >= need {
			return wellWithin, 0, st
		}
		return within, 0, st
	}
	if float64(room.Late) <= t.Budget()*float64(room.N)/2 && room.N >= need && float64(room.Pct) <= (1-h)*float64(bound) ||
		room.N >= c.cfg.MinSamples && float64(room.Max) <= (1-2*h)*float64(bound) {
		return wellWithin, 0, st
	}
	return within, 0, st
}

// evidence reports whether st's late requests are more than sv would
// have had late with probability Aim times its target's budget (and, if
// it misses the target alone, its share late alone besides), with
// probability below Alpha, and that probability.
func (c *Controller) evidence(st Stats, sv *service) (float64, bool) {
	b := c.cfg.Aim*sv.tr.Target().Budget() + sv.aloneLate
	if st.Late < 2 || float64(st.Late) <= b*float64(st.N) {
		return 1, false
	}
	p := BinomialTail(st.N, st.Late, b)
	alpha := c.cfg.Alpha
	if c.trial {
		alpha = c.cfg.TrialAlpha
	}
	return p, p < alpha
}

// needsProbe is a service with a ratio target and no latency alone that
// is busy enough to measure, when probing is allowed.
func (c *Controller) needsProbe(now time.Duration) *service {
	if now-c.lastProbe < c.cfg.ProbeEvery {
		return nil
	}
	for _, sv := range c.services {
		t := sv.tr.Target()
		// A ratio target without a bound, or an absolute one found out of
		// reach alone on requests older than Remember (is it still?).
		stale := t.Ratio == 0 && sv.aloneLate > 0 && now-sv.aloneAt >= c.cfg.Remember
		if (t.Ratio == 0 || sv.tr.Bound() > 0) && !stale {
			continue
		}
		if sv.tr.Window(now-c.cfg.Window, now).N >= c.cfg.MinSamples {
			return sv
		}
	}
	return nil
}

// endProbe returns from a probe once its time is up.
func (c *Controller) endProbe(now time.Duration) (Decision, bool) {
	if now < c.probeUntil {
		return Decision{}, false
	}
	c.probing = false
	why := "probe over"
	if sv := c.service(c.probeFor); sv != nil {
		if b := sv.tr.Bound(); b > 0 {
			why = fmt.Sprintf("probe over: %s alone p%g %v over %d requests, bound %v", sv.id, sv.tr.Target().Percentile,
				roundMs(aloneAt(sv.alone, sv.tr.Target().Percentile)), len(sv.alone), b)
		} else {
			why = fmt.Sprintf("probe over: %s ran %d of %d requests alone; its ratio target waits for the next probe",
				sv.id, len(sv.alone), c.cfg.MinAlone)
		}
	}
	d := c.move(now, c.probeFrom, c.probeFor, why)
	c.lastDown = false // a return from a probe is no step down
	return d, true
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

// judgedFrom is when a service's requests begin to be judged against the
// rung in force: those that arrived after the change settled and after
// the requests that came before then had ended (Tracker.Drained), at
// most a Window after the change. A queue built before a change
// drains after it whatever the new rung does: on an H100 (round 36) a
// batch-1 service's backlog, judged against each rung passed while it
// drained, climbed the controller from 0.82 of the TPCs to suspend in
// 2 s, and its late requests counted since the change kept it there
// through the next phase.
func (c *Controller) judgedFrom(sv *service) time.Duration {
	from := c.changedAt + c.settle
	if sv.drainFor == from && sv.drainFinal {
		return sv.drainAt
	}
	at, final := sv.tr.Drained(from, c.changedAt+c.cfg.Window)
	sv.drainFor, sv.drainAt, sv.drainFinal = from, at, final
	return at
}

// heldBy reports whether a service's requests since the last change
// (st: up to Evidence back) are enough to place its percentile and hold
// its target: no more late than its budget (Controller.budget: with the
// share late alone of a target out of reach alone). One without a target
// or a bound, futile, or idle since, holds.
func (c *Controller) heldBy(sv *service, now time.Duration, st Stats) bool {
	t := sv.tr.Target()
	if t.IsZero() || sv.tr.Bound() == 0 || sv.futile(now) || st.N == 0 {
		return true
	}
	return st.N >= c.placesPercentile(t) && float64(st.Late) <= c.budget(sv)*float64(st.N)
}

// tellsOfRungs reports whether sv's requests say anything of the rungs:
// it has a target with a bound, and is not a service that no rung holds
// (it misses alone, or restraint does not help it: futile).
func (sv *service) tellsOfRungs(now time.Duration) bool {
	return !sv.tr.Target().IsZero() && sv.tr.Bound() != 0 && sv.state != Unattainable && !sv.futile(now)
}

// futile reports whether sv is left alone now: restraint did not help it
// (giveUp), and FutileFor has not passed.
func (sv *service) futile(now time.Duration) bool { return sv.state == NotHeld && sv.futileUntil > now }

// placesPercentile is how many requests place t's percentile (100 for a
// p99), at least MinSamples and at most what a Tracker keeps.
func (c *Controller) placesPercentile(t Target) int {
	return min(max(c.cfg.MinSamples, int(math.Ceil(1/t.Budget()))), Keep)
}

// Forget clears what the controller remembers of the rungs (the loads
// each missed and held at, what each service's requests showed on each):
// they were measured beside the jobs of then, and a service or offline
// job that comes or goes changes what a rung holds.
func (c *Controller) Forget() {
	clear(c.fails)
	clear(c.held)
	for _, sv := range c.services {
		clear(sv.seen)
	}
}

// close reports whether a service is near its bound in st: some of its
// requests late, or its percentile past the headroom.
func (c *Controller) close(sv *service, st Stats) bool {
	b := sv.tr.Bound()
	return b > 0 && !sv.tr.Target().IsZero() && (st.Late > 0 || float64(st.Pct) > (1-c.cfg.Headroom)*float64(b))
}

// nearing reports whether a service whose load rose comes near its
// bound: over the Window (v within, st close), or in the requests of the
// last Short alone. The Window's requests are mostly of the load before
// the rise: a service well within its target at a low load may be
// close to its bound by the first requests of a high one, and its
// misses come before the evidence of them. judged is when its requests
// begin to be judged (judgedFrom).
func (c *Controller) nearing(sv *service, now, judged time.Duration, v verdict, st Stats) bool {
	if v == within && c.close(sv, st) {
		return true
	}
	recent := sv.tr.Judged(now-c.cfg.Short, judged, now)
	return recent.N >= c.cfg.MinSamples/2 && c.close(sv, recent)
}

// RiseExponent: a service's latency at its target's percentile on a
// rung grows with its load as the load to this power. Between the load
// phases of the H100 SLO benchmark with absolute targets (rounds 10 and
// 12-15: priority, MPS 70 % and 50 %, 45 pairs of phases) the p99 grew
// as the load to a median 0.32 (middle half 0.25-0.39, at most 0.60;
// priority's median 0.37): 0.5 errs on the side of the target.
const RiseExponent = 0.5

// JumpExponent is the growth a pre-emption expects when it passes over a
// rung predicted to miss (preemptTo): the median of the same 45 pairs of
// phases, 0.32, so that a rise is not met with more restraint than the
// typical growth asks (0.5 there missed 33 phases of 374 in the replay,
// not 38, but held a slow rise on a rung past the one it needed, which
// TestControllerReturnsToAHeldRung refuses).
const JumpExponent = 0.32

// seenMark is what a service's requests showed on a rung: their latency
// at its target's percentile and their arrival rate, and when.
type seenMark struct {
	pct  time.Duration
	rate float64
	at   time.Duration
	set  bool
}

// predicted is the latency at sv's target percentile predicted on rung
// to at the service's load now (loadOf), from what it showed there at a
// lower load within Remember (0: no prediction: not seen there lately, or
// seen at this load or a higher one).
func (c *Controller) predicted(sv *service, to int, now time.Duration, fell bool, exp float64) time.Duration {
	if to >= len(sv.seen) {
		return 0
	}
	m := sv.seen[to]
	rate := c.loadOf(sv, now, fell)
	if !m.set || now-m.at >= c.cfg.Remember || m.rate <= 0 || rate <= m.rate*heldMargin {
		return 0
	}
	return time.Duration(float64(m.pct) * math.Pow(rate/m.rate, exp))
}

// see keeps what sv's requests judged since the last change (st) show of
// the rung in force, once they are enough to judge (Step does not judge
// during a probe).
func (c *Controller) see(sv *service, now time.Duration, st Stats) {
	if st.N < c.cfg.MinSamples {
		return
	}
	if len(sv.seen) < len(c.cfg.Ladder) {
		sv.seen = make([]seenMark, len(c.cfg.Ladder))
	}
	sv.seen[c.level] = seenMark{pct: st.Pct, rate: st.Rate, at: now, set: true}
}

// loadOf is sv's request rate over the Window (by ends, as its rung's
// marks count them), or its arrival rate over the last Short just after a
// fall of load, which the Window lags.
func (c *Controller) loadOf(sv *service, now time.Duration, fell bool) float64 {
	if fell {
		return c.shortRate(sv, now)
	}
	return sv.tr.Window(now-c.cfg.Window, now).Rate
}

// mayReturn reports whether a fall of load may return to rung to at
// once: it has not missed at the load now lately (refused), and it is not
// predicted to (waitsForPrediction), on the loads over the last Short
// (the Window lags a fall).
func (c *Controller) mayReturn(to int, now time.Duration) bool {
	rate := c.shortRates(now)
	return !c.refused(to, now, rate) && !c.waitsForPrediction(to, now, true, rate)
}

// waitsForPrediction reports whether a step down onto rung to waits: a
// service is predicted past its bound there at its load now (fell: just
// after a fall of load), and the rung did not hold every target at the
// request rate rate lately. The service says why on its status.
func (c *Controller) waitsForPrediction(to int, now time.Duration, fell bool, rate float64) bool {
	sv, why := c.predictsMiss(to, now, fell, RiseExponent)
	if sv == nil || c.heldAt(to, now, rate) {
		return false
	}
	sv.detail += "; no step down: " + why
	return true
}

// predictsMiss is a service predicted past its bound on rung to at its
// load now (fell: just after a fall of load) with the latency growing as
// the load to the power exp, and why (nil: none).
func (c *Controller) predictsMiss(to int, now time.Duration, fell bool, exp float64) (*service, string) {
	for _, sv := range c.services {
		if !sv.tellsOfRungs(now) {
			continue
		}
		if p := c.predicted(sv, to, now, fell, exp); p > sv.tr.Bound() {
			m := sv.seen[to]
			return sv, fmt.Sprintf("%s predicted at p%g %v on %s (%v at %.1f requests/s, %.1f/s now)", sv.id, sv.tr.Target().Percentile,
				roundMs(p), c.cfg.Ladder[to], roundMs(m.pct), m.rate, c.loadOf(sv, now, fell))
		}
	}
	return nil, ""
}

// preemptTo is the rung a pre-emption of a rise climbs to: the next one
// up, or past it while a service is predicted past its bound there
// (JumpExponent) at its load over the last Short, from what it showed
// there at a lower load, and the rung has not held every target at this
// load lately; and the rungs passed over, with why, for the decision's
// reason. Climbing one rung at a time, the misses of a steep rise came
// before the evidence for the next rung (the replay of eleven H100
// rounds: high phases missed 36 of 99 that way, 23 passing over the
// rungs predicted to miss, TestControllerReplayScore).
func (c *Controller) preemptTo(now time.Duration) (int, string) {
	top := len(c.cfg.Ladder) - 1
	to, past := c.up(), ""
	rate := c.shortRates(now)
	for to < top && !c.heldAt(to, now, rate) {
		_, why := c.predictsMiss(to, now, true, JumpExponent)
		if why == "" {
			break
		}
		past += "; past " + c.cfg.Ladder[to].String() + ": " + why
		to = c.above(to)
	}
	return to, past
}

// heldMargin is how far above the load a rung held a load may be and
// still count as held there: a tenth, the noise of the rates kept.
const heldMargin = 1.1

// heldAt reports whether rung to held every target within Remember at a
// request rate at least near rate (within heldMargin).
func (c *Controller) heldAt(to int, now time.Duration, rate float64) bool {
	h := c.held[to]
	return h.set && now-h.at < c.cfg.Remember && h.rate*heldMargin >= rate
}

// heldBelow is the cheapest rung below the one in force that held every
// target within Remember at a request rate at least near rate (within
// heldMargin), with no rung from it up to the one in force refused at
// rate.
func (c *Controller) heldBelow(now time.Duration, rate float64) (int, bool) {
	for to := 0; to < c.level; to++ {
		if !c.heldAt(to, now, rate) {
			continue
		}
		ok := true
		for l := to; l < c.level && ok; l++ {
			ok = !c.refused(l, now, rate)
		}
		if ok {
			return to, true
		}
	}
	return 0, false
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

// BinomialTail is the probability that n requests, each late with
// probability p, have at least k late ones.
func BinomialTail(n, k int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lgN, _ := math.Lgamma(float64(n + 1))
	lp, lq := math.Log(p), math.Log1p(-p)
	sum := 0.0
	for i := k; i <= n; i++ {
		lgI, _ := math.Lgamma(float64(i + 1))
		lgR, _ := math.Lgamma(float64(n - i + 1))
		term := math.Exp(lgN - lgI - lgR + float64(i)*lp + float64(n-i)*lq)
		sum += term
		if term < sum*1e-12 && float64(i) > float64(n)*p {
			break
		}
	}
	return min(sum, 1)
}
