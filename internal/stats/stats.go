// Package stats holds the summary statistics mmk's measurement commands
// share.
package stats

import (
	"math"
	"slices"
)

// Median is the middle value of v, the mean of the two middle ones when
// v has an even length; v is not changed. It panics on an empty v.
func Median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Quantile is the nearest-rank q-quantile of v (q in [0, 1]): the
// smallest value with at least a share q of v at or below it; v is not
// changed. It panics on an empty v.
func Quantile(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(len(s)-1, max(0, k))]
}
