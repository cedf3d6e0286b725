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

// TestQuantile: nearest rank at the ends and between, input unchanged.
func TestQuantile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {0.1, 1}, {0.11, 2}, {0.5, 5}, {0.99, 10}, {1, 10},
	} {
		in := slices.Clone(v)
		if got := Quantile(in, tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
		if !slices.Equal(in, v) {
			t.Errorf("Quantile changed its input to %v", in)
		}
	}
}
