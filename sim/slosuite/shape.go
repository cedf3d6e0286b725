package slosuite

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// ShapeKind names a load shape.
type ShapeKind string

// The load shapes of the suite.
const (
	// Steps: the SLO benchmark's four phases, low, medium, high, low
	// again (medium the geometric mean of low and high).
	Steps ShapeKind = "steps"
	// Ramp: from low up to high over the first 60 % of the run, back
	// down to low over the rest.
	Ramp ShapeKind = "ramp"
	// Bursts: a base load (low) with bursts of BurstLen at three times it
	// at random times, about one every 8-16 s.
	Bursts ShapeKind = "bursts"
	// Sine: a day compressed into the run, between low and high, from a
	// random phase.
	Sine ShapeKind = "sine"
	// Random: eight phases at levels drawn between low and high (log
	// uniform), in random order.
	Random ShapeKind = "random"
)

// Kinds are the shapes, in the order the generator draws from.
var Kinds = []ShapeKind{Steps, Ramp, Bursts, Sine, Random}

// BurstLen is a burst's length, and BurstX its load against the base.
const (
	BurstLen = 2 * time.Second
	BurstX   = 3.0
)

// Shape is a service's load over a run: its arrival rate at each moment.
type Shape struct {
	Kind ShapeKind
	// Low and High are the rates (requests a second) the shape moves
	// between.
	Low, High float64
	// Length is the run's.
	Length time.Duration
	// Levels are the rates of equal phases (Steps, Random).
	Levels []float64
	// Starts are the bursts' starts (Bursts), sorted.
	Starts []time.Duration
	// Phase is Sine's phase, in radians.
	Phase float64
}

// Rate is the arrival rate at t (requests a second).
func (s Shape) Rate(t time.Duration) float64 {
	f := float64(t) / float64(s.Length)
	switch s.Kind {
	case Steps, Random:
		if len(s.Levels) == 0 {
			return s.Low
		}
		i := min(max(int(f*float64(len(s.Levels))), 0), len(s.Levels)-1)
		return s.Levels[i]
	case Ramp:
		const peak = 0.6
		if f <= peak {
			return s.Low + (s.High-s.Low)*f/peak
		}
		return s.High - (s.High-s.Low)*min((f-peak)/(1-peak), 1)
	case Bursts:
		i, found := slices.BinarySearch(s.Starts, t)
		if found || i > 0 && t < s.Starts[i-1]+BurstLen {
			return BurstX * s.Low
		}
		return s.Low
	case Sine:
		mid, amp := (s.High+s.Low)/2, (s.High-s.Low)/2
		return mid + amp*math.Sin(2*math.Pi*f+s.Phase)
	}
	return s.Low
}

// Max is the highest rate the shape reaches (the bound of thinning).
func (s Shape) Max() float64 {
	switch s.Kind {
	case Bursts:
		return BurstX * s.Low
	case Steps, Random:
		return slices.Max(append([]float64{s.Low}, s.Levels...))
	}
	return s.High
}

// String describes the shape for tables.
func (s Shape) String() string {
	return fmt.Sprintf("%s %.1f-%.1f/s", s.Kind, s.Low, s.Max())
}
