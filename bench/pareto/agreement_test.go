package main

import (
	"math"
	"testing"
)

// TestSelfAgreement: cycles that rank the settings alike agree (1), cycles
// that rank them the other way round disagree (-1), and too few cycles or
// settings give NaN.
func TestSelfAgreement(t *testing.T) {
	cycle := func(c int, p50s, lps []float64) []Window {
		ws := []Window{win("alone (MPS)", c, 1, 1, 0), win("LP alone (MPS)", c, 0, 0, 10)}
		for i, n := range []string{"a", "b", "c", "d"} {
			ws = append(ws, win(n, c, p50s[i], p50s[i], lps[i]))
		}
		return ws
	}
	up, down := []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}
	tests := []struct {
		name    string
		ws      []Window
		p50, lp float64
	}{
		{"alike", append(cycle(0, up, up), cycle(1, []float64{1.1, 2.5, 2.9, 9}, []float64{1, 2, 3, 5})...), 1, 1},
		{"reversed HP, alike LP", append(cycle(0, up, up), cycle(1, down, up)...), -1, 1},
		{"median of three pairs", append(append(cycle(0, up, up), cycle(1, up, up)...), cycle(2, down, down)...), -1, -1},
		{"one cycle", cycle(0, up, up), math.NaN(), math.NaN()},
	}
	for _, tc := range tests {
		p50, lp := SelfAgreement(tc.ws)
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"HP p50", p50, tc.p50}, {"LP", lp, tc.lp}} {
			if math.IsNaN(c.want) != math.IsNaN(c.got) || (!math.IsNaN(c.got) && math.Abs(c.got-c.want) > 1e-9) {
				t.Errorf("%s: %s agreement %v, want %v", tc.name, c.what, c.got, c.want)
			}
		}
	}
}
