package slo

import (
	"fmt"
	"time"
)

// Config tunes a Controller. Zero fields take DefaultConfig's. Each
// default says where its value came from; the scenario suite
// (sim/slosuite, `mmkctl sim slo`) scores every change of them on its
// held-out split (docs/slo.md).
type Config struct {
	// Ladder is the rungs, cheapest first.
	Ladder Ladder
	// Tick is the least time between two decisions.
	Tick time.Duration
	// Window is how far back a service's requests are shown (Status) and
	// its long arrival rate is taken; Short its short arrival rate, which
	// shows a rise within a second or two.
	Window, Short time.Duration
	// Settle: a request that starts within Settle of a change of rung
	// still meets the offline work of the rung before; its service time
	// is not kept for the new rung.
	Settle time.Duration
	// Calm is the stabilisation of a step down: the controller steps down
	// only as far as every choice of the last Calm allows (Kubernetes'
	// scale-down stabilisation window).
	Calm time.Duration
	// Aim is the share of a target's budget the controller aims for:
	// below 1 it leaves more margin than Risk alone. 0 takes the
	// default (1); at most 1.
	Aim float64
	// Judge is the span a target is judged over (a window of the
	// service's requests at its rate), and Risk the chance the
	// controller takes that such a window misses it: a rung holds a
	// service when the forecast gives a window at its load a chance of
	// 1-Risk or more to have no more late requests than its budget. A
	// p99 over 100 requests allows one late, over 1,000 ten: the margin
	// a rung needs follows from the load.
	Judge time.Duration
	Risk  float64
	// Tolerance: the rung in force is left for another only when its
	// risk passes Tolerance times Risk (Kubernetes' autoscaler's
	// tolerance band): a rung chosen at Risk is not left on a forecast a
	// little over it.
	Tolerance float64
	// Replay is how far back a service's own arrivals are served again
	// in every forecast, beside the Poisson arrivals at its rate: a
	// rung must hold the pattern of the last Replay (bursts) too. 0
	// takes the default; negative: none.
	Replay time.Duration
	// Remember is how long a rung's service times count (after that
	// they are forgotten: the offline work beside it may have changed).
	Remember time.Duration
	// Priors are what calibration says of the rungs (Priors): a rung not
	// measured beside the jobs of now is forecast from a measured one
	// through them, its forecast share late counted PriorPenalty times.
	Priors       Priors
	PriorPenalty float64
	// Alpha is the evidence feedback needs: a service's late requests
	// against the forecast's expectation, as unlikely as Alpha or less,
	// scale its service times by FeedbackStep (more late than forecast)
	// or by its inverse (fewer), within [1/FeedbackMax, FeedbackMax].
	Alpha, FeedbackStep, FeedbackMax float64
	// FeedbackMemory is how long feedback's counts last (they decay
	// exponentially with this time constant).
	FeedbackMemory time.Duration
	// MinAlone is the requests measured alone (after WarmUp) that set a
	// ratio target's bound; WarmUp the requests of a service never taken
	// as alone (its first: loading, compiling, caches; 0 takes the
	// default, negative none).
	MinAlone, WarmUp int
	// Probe is how long the controller holds the top rung to measure a
	// service with a ratio target alone; ProbeEvery the least time
	// between two probes.
	Probe, ProbeEvery time.Duration
}

// DefaultConfig suits services of a few to a few hundred requests a
// second.
func DefaultConfig() Config {
	return Config{
		Ladder: DefaultLadder(),
		// A decision every 500 ms: a forecast needs a few requests more
		// than it had, and the kernel scheduler applies a rung within
		// one of its own ticks (Tick/4).
		Tick: 500 * time.Millisecond,
		// 5 s and 2 s: the windows of the SLO benchmark's controller
		// (issue 34), kept.
		Window: 5 * time.Second,
		Short:  2 * time.Second,
		// 500 ms: an offline kernel runs at most a few tens of ms; the
		// queue model's service times settle within it on the H100
		// rounds (docs/results/slo-h100-shared.md).
		Settle: 500 * time.Millisecond,
		// Calm, Risk and Tolerance were chosen on the scenario suite's
		// tune split (docs/slo.md, "The scenario suite").
		Calm:      10 * time.Second,
		Aim:       1,
		Judge:     20 * time.Second,
		Risk:      0.05,
		Tolerance: 2,
		Replay:    20 * time.Second,
		// 5 minutes: the controller's memory of a rung since issue 34.
		Remember: 5 * time.Minute,
		Priors:   DefaultPriors(),
		// Twice the share late: a prior misses by that much in ...
		PriorPenalty: 2,
		// 1 %: the evidence the controller's climbs needed since issue
		// 34; a step of a quarter and at most 4x either way.
		Alpha:          0.01,
		FeedbackStep:   1.25,
		FeedbackMax:    4,
		FeedbackMemory: time.Minute,
		// 50 requests alone place a p98 (issue 34); 50 of warm-up: the
		// probe that counted warm-up measured 535 ms for a service of
		// 13 ms on an H200 (issue 52).
		MinAlone:   50,
		WarmUp:     50,
		Probe:      3 * time.Second,
		ProbeEvery: 10 * time.Minute,
	}
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if len(c.Ladder) == 0 {
		c.Ladder = d.Ladder
	}
	for _, p := range []*time.Duration{&c.Tick, &c.Window, &c.Short, &c.Settle, &c.Calm, &c.Judge, &c.Remember, &c.FeedbackMemory, &c.Probe, &c.ProbeEvery} {
		// (Replay may be negative: none.)
		if *p < 0 {
			return c, fmt.Errorf("slo controller: negative duration %v", *p)
		}
	}
	orZero(&c.Tick, d.Tick)
	orZero(&c.Window, d.Window)
	orZero(&c.Short, d.Short)
	orZero(&c.Settle, d.Settle)
	orZero(&c.Calm, d.Calm)
	orZero(&c.Aim, d.Aim)
	orZero(&c.Judge, d.Judge)
	orZero(&c.Risk, d.Risk)
	orZero(&c.Tolerance, d.Tolerance)
	orZero(&c.Remember, d.Remember)
	orZero(&c.Replay, d.Replay)
	if c.Priors == nil {
		c.Priors = d.Priors
	}
	orZero(&c.PriorPenalty, d.PriorPenalty)
	orZero(&c.Alpha, d.Alpha)
	orZero(&c.FeedbackStep, d.FeedbackStep)
	orZero(&c.FeedbackMax, d.FeedbackMax)
	orZero(&c.FeedbackMemory, d.FeedbackMemory)
	orZero(&c.MinAlone, d.MinAlone)
	orZero(&c.WarmUp, d.WarmUp)
	orZero(&c.Probe, d.Probe)
	orZero(&c.ProbeEvery, d.ProbeEvery)
	switch {
	case CheckAim(c.Aim) != nil:
		return c, fmt.Errorf("slo controller: %w", CheckAim(c.Aim))
	case !(c.Tolerance >= 1) || !(c.Risk*c.Tolerance < 1):
		return c, fmt.Errorf("slo controller: tolerance %v is below 1, or times risk %v not below 1", c.Tolerance, c.Risk)
	case !(c.Risk > 0 && c.Risk < 1):
		return c, fmt.Errorf("slo controller: risk %v is not in (0, 1)", c.Risk)
	case !(c.PriorPenalty >= 1):
		return c, fmt.Errorf("slo controller: prior penalty %v is below 1", c.PriorPenalty)
	case !(c.Alpha > 0 && c.Alpha < 1):
		return c, fmt.Errorf("slo controller: alpha %v is not in (0, 1)", c.Alpha)
	case !(c.FeedbackStep > 1) || !(c.FeedbackMax >= c.FeedbackStep):
		return c, fmt.Errorf("slo controller: feedback step %v must be above 1 and at most its max %v", c.FeedbackStep, c.FeedbackMax)
	case c.MinAlone < 1:
		return c, fmt.Errorf("slo controller: min alone %d must be at least 1", c.MinAlone)
	case c.Short > c.Window:
		return c, fmt.Errorf("slo controller: short %v is longer than the window %v", c.Short, c.Window)
	}
	if err := c.Priors.check(); err != nil {
		return c, fmt.Errorf("slo controller: %w", err)
	}
	return c, nil
}

// CheckAim refuses an aim (Config.Aim) outside (0, 1]: the one check
// of the controller's config, its SetAim, mmkd's config and the serve
// command's flag.
func CheckAim(aim float64) error {
	if !(aim > 0 && aim <= 1) {
		return fmt.Errorf("aim %v is not in (0, 1]", aim)
	}
	return nil
}

func orZero[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
