package main

import (
	"math"
	"testing"
	"time"
)

func TestSpearman(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		{"same order", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"ties take the mean rank", []float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, 0.9486832980505138},
		{"no spread", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"too few", []float64{1, 2}, []float64{1, 2}, math.NaN()},
	}
	for _, tc := range tests {
		got := Spearman(tc.x, tc.y)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSettingOf: the measured settings map to their simulation by
// segment, name and policy line; what cannot be mapped is left out.
func TestSettingOf(t *testing.T) {
	tests := []struct {
		row       Row
		ok, mps   bool
		prio, pct int
		policy    string
		tau       time.Duration
	}{
		{Row{Setting: "default", Segment: "no-mps"}, true, false, 0, 100, "fifo", 0},
		{Row{Setting: "something else", Segment: "no-mps"}, false, false, 0, 100, "fifo", 0},
		{Row{Setting: "MPS", Segment: "mps"}, true, true, 0, 100, "fifo", 0},
		{Row{Setting: "MPS, LP prio 1, 70 %", Segment: "mps"}, true, true, 1, 70, "fifo", 0},
		{Row{Setting: "guard, tau 64us", Segment: "mps", Policy: "guard tau=64us"}, true, true, 1, 100, "guard", 64 * time.Microsecond},
		{Row{Setting: "x", Segment: "mps", Policy: "nosuchpolicy"}, false, true, 1, 100, "fifo", 0},
	}
	for _, tc := range tests {
		s, ok := settingOf(tc.row)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.row.Setting, ok, tc.ok)
			continue
		}
		if ok && (s.mps != tc.mps || s.lpPrio != tc.prio || s.lpPercent != tc.pct || s.policy != tc.policy || s.guard.Tau != tc.tau) {
			t.Errorf("%s: %+v", tc.row.Setting, s)
		}
	}
}
