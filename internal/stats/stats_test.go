package stats

import (
	"slices"
	"testing"
)

// TestMedian: odd and even lengths, unsorted input left as it was.
func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 7}, 3},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.in)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("Median changed its input to %v", in)
		}
	}
}
