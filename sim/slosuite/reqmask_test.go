package slosuite

import (
	"math"
	"testing"
)

// TestCovered: the share of a stretch that spans cover, each counted
// once where they overlap; spans outside the stretch, or empty, count
// nothing (before, a span past its end took its length off).
func TestCovered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spans    []span
		from, to float64
		want     float64
	}{
		{"none", nil, 0, 10, 0},
		{"one", []span{{2, 4}}, 0, 10, 0.2},
		{"overlapping, unsorted", []span{{5, 9}, {2, 6}}, 0, 10, 0.7},
		{"touching", []span{{0, 5}, {5, 10}}, 0, 10, 1},
		{"clipped at both ends", []span{{-3, 2}, {8, 14}}, 0, 10, 0.4},
		{"past the end", []span{{1, 2}, {11, 12}}, 0, 10, 0.1},
		{"before the start", []span{{-5, -1}, {3, 4}}, 0, 10, 0.1},
		{"a later stretch", []span{{1, 2}, {11, 13}, {12, 15}}, 10, 20, 0.4},
		{"empty span", []span{{3, 3}, {4, 5}}, 0, 10, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := covered(tc.spans, tc.from, tc.to); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("covered %v of [%v, %v) = %v, want %v", tc.spans, tc.from, tc.to, got, tc.want)
			}
		})
	}
}

// mean is the mean of v (0 for none).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}
