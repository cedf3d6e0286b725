package main

import (
	"slices"
)

// SelfAgreement is how well the measurement ranks the settings of one pair
// against itself: for every two cycles, Spearman's rank correlation of the
// settings' HP p50 (and LP throughput) ratios over alone in one cycle with
// those in the other, over the settings measured in both; the median over
// the pairs of cycles. Where this is low, the settings differ by less than
// the measurement's noise, and a model's rank correlation with the
// medians (steadier than one cycle, but from three or four) says little.
// NaN when fewer than two cycles or three common settings.
func SelfAgreement(ws []Window) (p50, lp float64) {
	aloneHP, aloneLP := alones(ws)
	// Per cycle, per setting, the ratios.
	hpBy, lpBy := map[int]map[string]float64{}, map[int]map[string]float64{}
	for _, w := range ws {
		if hp, lpAlone := isAlone(w.Setting); hp || lpAlone {
			continue
		}
		k := cycleKey{w.Segment, w.Cycle}
		if a := aloneHP[k]; a != nil && a.P50Ms > 0 && w.HPStats != nil && w.HPStats.P50Ms > 0 {
			put(hpBy, w.Cycle, w.Setting, w.HPStats.P50Ms/a.P50Ms)
		}
		if a := aloneLP[k]; a > 0 && w.LPStats != nil {
			put(lpBy, w.Cycle, w.Setting, w.LPStats.ItS/a)
		}
	}
	return medianPairwise(hpBy), medianPairwise(lpBy)
}

func put(m map[int]map[string]float64, cycle int, setting string, v float64) {
	if m[cycle] == nil {
		m[cycle] = map[string]float64{}
	}
	m[cycle][setting] = v
}

// medianPairwise is the median of Spearman's rho over every two cycles,
// on the settings both measured.
func medianPairwise(by map[int]map[string]float64) float64 {
	var cycles []int
	for c := range by {
		cycles = append(cycles, c)
	}
	slices.Sort(cycles)
	var rhos []float64
	for i, a := range cycles {
		for _, b := range cycles[i+1:] {
			var x, y []float64
			for s, v := range by[a] {
				if w, ok := by[b][s]; ok {
					x, y = append(x, v), append(y, w)
				}
			}
			if len(x) >= 3 {
				rhos = append(rhos, Spearman(x, y))
			}
		}
	}
	return spreadOf(rhos).Med
}
