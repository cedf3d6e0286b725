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
	// Met: its recent requests are within its target.
	Met State = "met"
	// Missed: its recent requests are not.
	Missed State = "missed"
	// NotHeld: no rung is forecast to hold it; the controller is on the
	// rung forecast to leave the fewest late.
	NotHeld State = "not held"
	// Unattainable: it is forecast to miss its target with the offline
	// jobs suspended.
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
	// Service is the service whose forecast decided it ("" for a step
	// down, which every service allows).
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
	// requests it rests on (0: not measured), past the warm-up.
	Alone  time.Duration
	AloneN int
	// Reported says the service reports its own latencies (judged by
	// them); else the hook measures them.
	Reported bool
	State    State
	// Detail says State in numbers.
	Detail string
	// Futile: not held, and no rung is forecast to leave it fewer late
	// than the cheapest (restraining the offline jobs does not help it).
	Futile bool
	// Rate is its arrival rate (requests a second) the controller
	// forecasts at; Forecast its share in time forecast on the rung in
	// force (0: none); Scale how much longer than measured feedback takes
	// its service times to be.
	Rate, Forecast, Scale float64
}

// Controller holds the targets of the services of one GPU instance by
// choosing a rung of its ladder for the offline jobs there: at each step
// the cheapest rung whose queue forecast holds every service at its load
// now (forecast.go, plant.go), the rung in force kept within a tolerance
// band, a step down only as far as every choice of the last Calm
// (choose.go), the forecasts corrected by what the requests showed
// (feedback.go). It is not safe for concurrent use.
type Controller struct {
	cfg      Config
	services []*service // in the order added
	level    int
	// changedAt is when the rung last changed, climbedAt when it last
	// rose, lastTick the last step.
	changedAt, climbedAt, lastTick time.Duration
	started                        bool
	alike                          []bool
	downs                          []downChoice
	// probe: while probing, the rung to return to, when it ends and for
	// whom.
	probing    bool
	probeUntil time.Duration
	probeFrom  int
	probeFor   string
	lastProbe  time.Duration
	// unsuspended: a suspension in force did not stop every offline job
	// (SetSuspended), since unsuspendedAt; suspendedAt: when the last one
	// that had failed stopped them all.
	unsuspended                bool
	unsuspendedAt, suspendedAt time.Duration
	// offline is how many offline jobs the rung restrains (SetOffline;
	// -1: not told).
	offline int
}

// never is a time long before any step.
const never = -1 << 62

// New builds a controller at rung 0.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, changedAt: never, climbedAt: never, lastTick: never, lastProbe: never, unsuspendedAt: never, suspendedAt: never, offline: -1}, nil
}

// SetSuspended tells the controller whether every offline job is
// stopped that its rung suspends (true where it suspends none): after its
// rung was applied at now, and, false, when an offline job comes while
// the rung suspends (it runs until the rung is applied). While one runs
// on, no request is taken for a service alone. A request that starts
// within Settle of a change keeps no service time (a job that came runs
// until the rung is applied to it, a few ticks); one that starts later,
// while a job still runs on (its stop is refused, it runs unseen), is
// kept for the rung as it is applied, apart from those of a whole
// suspension: a suspension that stops nothing is measured as such, and
// left for a cheaper rung that holds as well (bench rounds 70-72: a
// controller that did not see it held a suspension that stopped nothing
// for 30 s and more). Once all are stopped again, only requests that
// arrive Settle after that are taken alone.
func (c *Controller) SetSuspended(all bool, now time.Duration) {
	switch {
	case c.unsuspended && all:
		c.suspendedAt = now
	case !c.unsuspended && !all:
		c.unsuspendedAt = now
	}
	c.unsuspended = !all
}

// settling reports whether a request that started at start met a change
// of the suspension's state (SetSuspended) less than Settle before.
func (c *Controller) settling(start time.Duration) bool {
	return c.unsuspended && start <= c.unsuspendedAt+c.cfg.Settle || start <= c.suspendedAt+c.cfg.Settle
}

// Reset puts the controller back on rung 0 at now; it keeps the
// services, their requests and what they measured alone, and forgets
// what it measured of the rungs (Forget).
func (c *Controller) Reset(now time.Duration) {
	c.level, c.changedAt, c.started, c.probing, c.downs = 0, now, true, false, nil
	c.Forget()
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
// that can mask is "tpcs=0.75"): such rungs are one rung to it, measured
// and chosen as the lowest of them. nil: no rung is alike. The slice is
// kept.
func (c *Controller) SetAlike(alike []bool) { c.alike = alike }

// canon is the lowest rung that restrains as rung i does now.
func (c *Controller) canon(i int) int {
	for i > 0 && i-1 < len(c.alike) && c.alike[i-1] {
		i--
	}
	return i
}

// SetOffline tells the controller how many offline jobs its rung
// restrains (negative, the start: not told). With none, it stays on rung
// 0: there is nothing to restrain, nor to probe.
func (c *Controller) SetOffline(n int) { c.offline = n }

// Probing reports whether the controller is measuring a service alone.
func (c *Controller) Probing() bool { return c.probing }

// AddService starts tracking an online job with a target (a zero target:
// measured and shown, never protected). Adding an id again replaces it.
// What the rungs measured is forgotten: it was beside the services of
// then.
func (c *Controller) AddService(id string, t Target) {
	c.RemoveService(id)
	c.Forget()
	c.services = append(c.services, newService(id, t))
}

// SetTarget changes a service's target, keeping its requests, its
// service times and what it measured alone; an unknown id is added.
func (c *Controller) SetTarget(id string, t Target) {
	sv := c.service(id)
	if sv == nil {
		c.AddService(id, t)
		return
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

// Detached is a service taken out of the controller with what it knows
// of it (its requests, verdicts, service times and feedback), to be put
// back by Attach.
type Detached struct{ sv *service }

// Detach stops tracking a service without forgetting what the rungs
// held (a task that reconnects is put back as it was: Attach); ok is
// false for an unknown id. A service that does not come back is gone:
// call Forget then, as RemoveService does.
func (c *Controller) Detach(id string) (d Detached, ok bool) {
	sv := c.service(id)
	if sv == nil {
		return Detached{}, false
	}
	c.services = slices.DeleteFunc(c.services, func(s *service) bool { return s == sv })
	return Detached{sv}, true
}

// Attach puts a detached service back as it was, replacing one of its
// id.
func (c *Controller) Attach(d Detached) {
	if d.sv == nil {
		return
	}
	c.services = slices.DeleteFunc(c.services, func(s *service) bool { return s.id == d.sv.id })
	c.services = append(c.services, d.sv)
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

// Forget clears what the controller measured of the rungs (each
// service's service times there): they were measured beside the jobs of
// then, and a service or offline job that comes or goes changes them.
// The feedback on each service's forecasts stays.
func (c *Controller) Forget() {
	for _, sv := range c.services {
		clear(sv.times)
		clear(sv.cache)
	}
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
		sv.alone, sv.requests = sv.alone[:0], 0
	}
	c.observe(sv, s)
	if s.Source == Hook && sv.tr.Reported() {
		return
	}
	c.observeAlone(sv, s, alone)
}

// Step forecasts every rung at the services' loads and moves the rung
// when the forecasts say so; it acts at most once a Tick. It returns the
// decision when the rung changed: to the cheapest rung forecast to hold
// every target, at once where the rung in force is forecast past
// Tolerance times the Risk; down to the highest rung chosen over the last
// Calm, where it is not.
func (c *Controller) Step(now time.Duration) (Decision, bool) {
	if now-c.lastTick < c.cfg.Tick {
		return Decision{}, false
	}
	dt := now - c.lastTick
	c.lastTick = now
	if !c.started {
		c.started, c.changedAt, dt = true, now, 0
	}
	if c.probing {
		return c.endProbe(now)
	}
	rates := map[*service]float64{}
	counted, informed := false, false
	for _, sv := range c.services {
		clear(sv.replays)
		rates[sv] = c.rate(sv, now)
		last := sv.tr.Last()
		sv.idle = last < 0 || now-last >= c.cfg.Window
		if sv.counts() {
			counted = true
			informed = informed || c.measured(sv, now, false) >= 0
		}
	}
	c.feed(now, dt)
	d, changed := c.decide(now, rates, counted, informed)
	if !changed {
		d, changed = c.startProbe(now)
	}
	c.judge(now, rates)
	return d, changed
}

// decide is Step's choice of rung.
func (c *Controller) decide(now time.Duration, rates map[*service]float64, counted, informed bool) (Decision, bool) {
	cur := c.canon(c.level)
	if !counted || c.offline == 0 {
		if cur == 0 {
			return Decision{}, false
		}
		why := "no service has a target in force"
		if slices.ContainsFunc(c.services, (*service).targeted) {
			why = fmt.Sprintf("no service with a target had a request in the last %v", c.cfg.Window)
		}
		if c.offline == 0 {
			why = "no offline job on the instance to restrain"
		}
		return c.move(now, 0, "", "relax: "+why), true
	}
	if !informed || c.trying(now) {
		// No service time yet of any service with a target: nothing to
		// forecast from; or a rung moved to on the priors' word is being
		// measured: the rung stays.
		return Decision{}, false
	}
	// Up, a rung the priors alone forecast counts its share late
	// PriorPenalty times; down, it is tried as forecast (its own service
	// times decide once it has them: trying).
	up, views, holds := c.choose(now, rates, c.cfg.PriorPenalty)
	if u := c.unmeasuredAbove(cur, now); !holds && u > up {
		// No rung is forecast to hold, and one above is known only by
		// the priors: it is tried (the highest: the likeliest to hold),
		// its own service times then say what it does.
		up = u
	}
	down, _, _ := c.choose(now, rates, trial)
	c.downs = append(c.downs, downChoice{now, down})
	stable := c.stableDown(now)
	in := c.view(cur, now, rates, c.cfg.PriorPenalty)
	switch {
	case in.risk > c.cfg.Tolerance && (up > cur || holds && up < cur):
		// The rung in force is forecast to miss: at once to the cheapest
		// rung forecast to hold (below it too, where a rung restrains
		// more and helps less), or up to the one forecast to leave the
		// fewest late.
		why := "tighten: "
		if up < cur {
			why = "relax: "
		}
		id := ""
		if in.who != nil {
			id = in.who.id
		}
		return c.move(now, up, id, why+c.reason(now, up, views, rates, c.cfg.PriorPenalty)), true
	case stable < cur && (in.risk <= c.cfg.Tolerance || !holds):
		return c.move(now, stable, "", "relax: "+c.reason(now, stable, []rungView{c.view(stable, now, rates, trial)}, rates, 1)), true
	}
	return Decision{}, false
}

// unmeasuredAbove is the highest rung above cur that some service with a
// target has no service times of (-1: none).
func (c *Controller) unmeasuredAbove(cur int, now time.Duration) int {
	for i := len(c.cfg.Ladder) - 1; i > cur; i-- {
		if c.canon(i) != i {
			continue
		}
		for _, sv := range c.services {
			if sv.counts() && c.measured(sv, now, false) >= 0 && (i >= len(sv.times) || !sv.times[i].usable(now, c.cfg.Remember)) {
				return i
			}
		}
	}
	return -1
}

// trying reports whether the rung in force is on trial: it was moved to
// less than two Windows ago and a service with service times elsewhere
// has too few of its own there yet, so that its forecast is the priors'. A
// rung is tried briefly rather than judged on the priors' word again
// half a second later, at a rate a few requests higher.
func (c *Controller) trying(now time.Duration) bool {
	if now-c.changedAt >= 2*c.cfg.Window {
		return false
	}
	cur := c.canon(c.level)
	for _, sv := range c.services {
		if sv.counts() && c.measured(sv, now, false) >= 0 && (cur >= len(sv.times) || !sv.times[cur].usable(now, c.cfg.Remember)) {
			return true
		}
	}
	return false
}

// feed gives each service's feedback the requests judged since the last
// step, against the forecast of the rung in force where the service has
// its own service times there, and lets it adjust.
func (c *Controller) feed(now, dt time.Duration) {
	cur := c.canon(c.level)
	for _, sv := range c.services {
		n, late, expect := 0, 0, 0.0
		if sv.counts() && cur < len(sv.times) && sv.times[cur].usable(now, c.cfg.Remember) {
			n, late, expect = expected(sv.recent, c.judgedFrom(sv), sv.times[cur].d, sv.fb.scale, sv.tr.Bound(), sv.queued(), uint64(now))
		}
		for i := range sv.recent {
			sv.recent[i].fresh = false
		}
		sv.fb.feed(n, late, expect, dt, c.cfg.FeedbackMemory)
		if sv.counts() && sv.fb.adjust(c.cfg, sv.id) {
			clear(sv.cache)
		}
	}
}

// move changes the rung.
func (c *Controller) move(now time.Duration, to int, id, reason string) Decision {
	d := Decision{At: now, From: c.level, To: to, Rung: c.cfg.Ladder[to], Service: id,
		Reason: fmt.Sprintf("%s -> %s: %s", c.cfg.Ladder[c.level], c.cfg.Ladder[to], reason)}
	if to > c.level {
		// The stabilisation of steps down starts again: the choices
		// before a climb were made at a load it did not meet.
		c.downs, c.climbedAt = c.downs[:0], now
	}
	c.level, c.changedAt = to, now
	return d
}

// judge sets each service's state and its detail, in numbers: its
// requests over the Window against its target, and its forecast on the
// rung in force.
func (c *Controller) judge(now time.Duration, rates map[*service]float64) {
	top := c.canon(len(c.cfg.Ladder) - 1)
	for _, sv := range c.services {
		t, bound := sv.tr.Target(), sv.tr.Bound()
		st := sv.tr.Window(now-c.cfg.Window, now)
		sv.futile = false
		switch {
		case t.IsZero():
			sv.state, sv.detail = Met, "no target"
			continue
		case bound == 0:
			sv.state, sv.detail = Calibrating, fmt.Sprintf("%d of %d requests alone measured for %s (after its first %d)", len(sv.alone), c.cfg.MinAlone, t, c.cfg.WarmUp)
			continue
		case st.N == 0:
			sv.state, sv.detail = Idle, "no request in the window"
			continue
		}
		met := st.Pct <= bound
		sv.state = Met
		word := "within"
		if !met {
			sv.state, word = Missed, "past"
		}
		sv.detail = fmt.Sprintf("p%g %v %s %v over %d requests, %d late", t.Percentile, roundMs(st.Pct), word, roundMs(bound), st.N, st.Late)
		here, _, ok := c.forecast(sv, c.level, now, rates[sv], 1)
		if !ok {
			continue
		}
		sv.detail += "; forecast " + c.says(sv, c.level, now, rates[sv], 1)
		best, _, _ := c.forecast(sv, top, now, rates[sv], 1)
		// A suspension that left a job running says nothing of the
		// service with the offline jobs suspended.
		own := top < len(sv.times) && sv.times[top].basis(now, c.cfg.Remember)
		missed := func(o outlook) bool { return 1-o.hold > c.cfg.Risk }
		switch {
		case own && missed(best) && c.cfg.Ladder[top].Suspend:
			sv.state = Unattainable
			sv.detail += "; even with the offline jobs suspended: " + c.says(sv, top, now, rates[sv], 1)
			sv.futile = true
		case missed(here) && missed(best):
			sv.state, sv.futile = NotHeld, !better(c.serviceView(sv, top, now, rates[sv]), c.serviceView(sv, 0, now, rates[sv]))
			sv.detail += fmt.Sprintf("; no rung is forecast to hold it (a window kept with %.0f %% or more)", 100*(1-c.cfg.Risk))
		}
	}
}

// Status is every service's standing at now, in the order added.
func (c *Controller) Status(now time.Duration) []ServiceStatus {
	out := make([]ServiceStatus, 0, len(c.services))
	for _, sv := range c.services {
		t := sv.tr.Target()
		st := ServiceStatus{ID: sv.id, Target: t, Bound: sv.tr.Bound(), Recent: sv.tr.Window(now-c.cfg.Window, now),
			State: sv.state, Detail: sv.detail, Futile: sv.futile, AloneN: len(sv.alone), Reported: sv.tr.Reported(),
			Rate: c.rate(sv, now), Scale: sv.fb.scale}
		st.Total, st.Late = sv.tr.Total()
		if len(sv.alone) > 0 {
			st.Alone = aloneAt(sv.alone, cmp.Or(t.Percentile, 99))
		}
		if o, _, ok := c.forecast(sv, c.level, now, st.Rate, 1); ok && sv.counts() {
			st.Forecast = 1 - o.late
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
