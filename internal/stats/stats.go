// Package stats holds the summary statistics mmk's measurement commands
// share.
package stats

import "slices"

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
