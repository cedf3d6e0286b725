package slosuite

import (
	"math"
	"testing"

	"github.com/mmkgpu/mmk/slo"
)

// TestDefaultPriorsAreTheCalibrations: slo.DefaultPriors are the
// built-in calibration's (Calibration.PriorsFrom over every mix, to two
// decimals, within rounding), one for each rung it measured, the request-scoped masks
// among them; the static settings by hand (MPS shares) are no rungs.
func TestDefaultPriorsAreTheCalibrations(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	def := slo.DefaultPriors()
	got := c.PriorsFrom("")
	n := 0
	for name, f := range got {
		r, err := slo.ParseRung(name)
		if err != nil {
			continue // prio+70%, prio+50%: by hand
		}
		n++
		want, ok := def[r.String()]
		t.Logf("%s: calibrated %.3f, default %v", name, f, want)
		if !ok || math.Abs(f-want) > 0.0051 {
			t.Errorf("rung %s: calibrated %.3f, DefaultPriors %v (ok %v)", name, f, want, ok)
		}
	}
	if n != len(def) {
		t.Errorf("%d rungs calibrated, %d default priors", n, len(def))
	}
}
