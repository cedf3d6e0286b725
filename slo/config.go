package slo

import (
	"fmt"
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
	// NoForecast turns the queue forecast off (forecast.go): rungs are
	// then predicted only from the latency they showed at a lower load.
	NoForecast bool
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
	case CheckAim(c.Aim) != nil:
		return c, fmt.Errorf("slo controller: %w", CheckAim(c.Aim))
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
