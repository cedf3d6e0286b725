package kernelsched

import (
	"fmt"
	"time"
)

// NumPriorities is the number of priority queues, Q0 (highest) to Q9.
const NumPriorities = 10

// Config holds the instance's capacity and the policies' parameters.
// Zero fields take the defaults of DefaultConfig.
type Config struct {
	// SMs is the streaming multiprocessors of the GPU instance.
	SMs int
	// Limits are the per-SM limits of the GPU's architecture.
	Limits SMLimits
	// BandwidthGBs is the instance's memory bandwidth. The contention
	// check compares a kernel's bandwidth demand with what is free only
	// when both are known (non-zero).
	BandwidthGBs float64
	// Epsilon: fikit leaves predicted gaps shorter than this unfilled.
	Epsilon time.Duration
	// Inflight and InflightWork bound the released, unfinished kernels of
	// a task that can be preempted: at most Inflight kernels whose
	// predicted durations add up to at most InflightWork (one kernel may
	// always go). Kernels cannot be interrupted, so this bounds how long a
	// preempting task waits at the GPU, while keeping a queue of short
	// kernels at the GPU.
	Inflight     int
	InflightWork time.Duration
	// SwitchOverhead is the cost hpf and ffs charge for giving the GPU to
	// another task.
	SwitchOverhead time.Duration
	// MaxSwitchOverhead is the largest fraction of time ffs may spend
	// switching; it sets ffs's epoch length T.
	MaxSwitchOverhead float64
	// AgeStep and AgeCap: dprr raises a waiting task's priority by one per
	// AgeStep waited, by at most AgeCap.
	AgeStep time.Duration
	AgeCap  int
	// Quantum is how long exclusive lets one task hold the GPU while
	// others wait.
	Quantum time.Duration
	// Guard tunes guard, mmk's own policy.
	Guard GuardConfig
}

// GuardConfig tunes guard (guard.go). Zero fields take the defaults of
// DefaultConfig.
type GuardConfig struct {
	// Slack is the slowdown of an online task's median request latency
	// over its latency alone that guard accepts before it holds offline
	// kernels (0.05: 5 %).
	Slack float64
	// Tau, when set, fixes the block-time threshold instead of adapting
	// it: while an online request runs, offline kernels whose predicted
	// block time exceeds Tau are held. A negative Tau holds every offline
	// kernel during online requests (and fills the think time between
	// them with kernels that end before the next request is due).
	Tau time.Duration
	// Inflight bounds the offline work (predicted GPU time) released and
	// unfinished while an online request runs.
	Inflight time.Duration
	// Floor is the share of time every offline task is granted at least,
	// whatever the online tasks need, so that none starves.
	Floor float64
	// ProbeEvery: one online request in this many is a probe, run with
	// every offline kernel held, that measures the request alone.
	ProbeEvery int
}

// DefaultConfig is a whole H100 or H200 (132 SMs).
func DefaultConfig() Config {
	return Config{
		SMs:               132,
		Limits:            Hopper,
		Epsilon:           100 * time.Microsecond,
		Inflight:          8,
		InflightWork:      100 * time.Microsecond,
		SwitchOverhead:    50 * time.Microsecond,
		MaxSwitchOverhead: 0.05,
		AgeStep:           time.Millisecond,
		AgeCap:            20,
		Quantum:           20 * time.Millisecond,
		Guard: GuardConfig{
			Slack:      0.05,
			Inflight:   2 * time.Millisecond,
			Floor:      0.25,
			ProbeEvery: 128,
		},
	}
}

// withDefaults fills zero fields from DefaultConfig and validates.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	orDefault(&c.SMs, d.SMs)
	orDefault(&c.Limits, d.Limits)
	orDefault(&c.Epsilon, d.Epsilon)
	orDefault(&c.Inflight, d.Inflight)
	orDefault(&c.InflightWork, d.InflightWork)
	orDefault(&c.SwitchOverhead, d.SwitchOverhead)
	orDefault(&c.MaxSwitchOverhead, d.MaxSwitchOverhead)
	orDefault(&c.AgeStep, d.AgeStep)
	orDefault(&c.AgeCap, d.AgeCap)
	orDefault(&c.Quantum, d.Quantum)
	orDefault(&c.Guard.Slack, d.Guard.Slack)
	orDefault(&c.Guard.Inflight, d.Guard.Inflight)
	orDefault(&c.Guard.Floor, d.Guard.Floor)
	orDefault(&c.Guard.ProbeEvery, d.Guard.ProbeEvery)
	if err := c.Limits.validate(); err != nil {
		return c, err
	}
	switch {
	case c.SMs < 1:
		return c, fmt.Errorf("SMs: %d must be at least 1", c.SMs)
	case c.BandwidthGBs < 0:
		return c, fmt.Errorf("bandwidth: %v GB/s is negative", c.BandwidthGBs)
	case c.Epsilon < 0:
		return c, fmt.Errorf("epsilon: %v is negative", c.Epsilon)
	case c.Inflight < 1:
		return c, fmt.Errorf("inflight: %d must be at least 1", c.Inflight)
	case c.InflightWork < 0:
		return c, fmt.Errorf("inflight work: %v is negative", c.InflightWork)
	case c.SwitchOverhead < 0:
		return c, fmt.Errorf("switch overhead: %v is negative", c.SwitchOverhead)
	case c.MaxSwitchOverhead <= 0 || c.MaxSwitchOverhead >= 1:
		return c, fmt.Errorf("max switch overhead: %v is not in (0, 1)", c.MaxSwitchOverhead)
	case c.AgeStep < 0 || c.AgeCap < 0:
		return c, fmt.Errorf("ageing: step %v and cap %d must not be negative", c.AgeStep, c.AgeCap)
	case c.Quantum < 0:
		return c, fmt.Errorf("quantum: %v is negative", c.Quantum)
	case c.Guard.Slack < 0:
		return c, fmt.Errorf("guard slack: %v is negative", c.Guard.Slack)
	case c.Guard.Inflight < 0:
		return c, fmt.Errorf("guard inflight: %v is negative", c.Guard.Inflight)
	case c.Guard.Floor < 0 || c.Guard.Floor > 1:
		return c, fmt.Errorf("guard floor: %v is not in [0, 1]", c.Guard.Floor)
	case c.Guard.ProbeEvery < 2:
		return c, fmt.Errorf("guard probe-every: %d must be at least 2", c.Guard.ProbeEvery)
	}
	return c, nil
}

// orDefault sets *v to d when *v is its type's zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
