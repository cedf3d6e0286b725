package slo

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Priors are what calibration measured of rungs beside trainers in
// general: for a rung (by its text form, Rung.String), the factor by
// which a service's service times there are taken to be its times on
// priority (the zero Rung, factor 1). A rung not measured beside the jobs
// of now is forecast from one that was, its service times scaled by the
// ratio of their factors (and the forecast's share late counted
// Config.PriorPenalty times); a rung without a factor takes the measured
// rung's times as they are.
type Priors map[string]float64

// check refuses a factor that is not a positive number.
func (p Priors) check() error {
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if f := p[k]; !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("prior of rung %s: factor %v is not a positive number", k, f)
		}
	}
	return nil
}

// of is rung r's factor: its prior; 1 for priority and for a rung
// without one.
func (p Priors) of(r Rung) float64 {
	if r == (Rung{}) {
		return 1
	}
	if f, ok := p[r.String()]; ok {
		return f
	}
	if r.PerRequest {
		// A service's kernels meet the same mask during its requests:
		// the mask throughout's prior, until one is calibrated.
		r.PerRequest = false
		return p.of(r)
	}
	return 1
}

// DefaultPriors are the H200 calibration's (docs/results/calib-h200-2026-11-29,
// issue 52): per rung, the median over four trainer mixes and three
// services of a service's mean service time there against priority
// (slosuite's Calibration.PriorsFrom; sim/slosuite's
// TestDefaultPriorsAreTheCalibrations holds them to it). Three services
// shared the GPU there, which is why suspending the trainers shortened
// them by a quarter only. The request-scoped masks were measured on
// another H200 the same day beside the same mixes
// (docs/results/calib-h200-2026-11-29-req), against the first's
// priority: each helps a little less than the same mask throughout (a
// request's first kernels meet the offline kernels launched before it).
// The scenario suite does not read these (each scenario is forecast from
// the other mixes' calibration, Calibration.RungPriors), so its numbers
// do not move with them: held-out 97.6 % of the static-held segments at
// 0.80x before and after the request-scoped ones were added (`mmkctl sim
// slo`, docs/results/slo-suite/06e160c-req).
func DefaultPriors() Priors {
	return Priors{
		"tpcs=0.97":     1.01,
		"tpcs=0.75":     0.93,
		"tpcs=0.5":      0.91,
		"tpcs=0.25":     0.84,
		"tpcs=0.75/req": 0.98,
		"tpcs=0.5/req":  0.94,
		"tpcs=0.25/req": 0.87,
		"hold":          1.02,
		"suspend":       0.76,
	}
}
