package slo

import (
	"testing"
	"time"
)

func TestZZDiag(t *testing.T) {
	phaseLen := 22 * time.Second
	target := MustParse("p99=25ms")
	buckets := []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second, 16 * time.Second, 22 * time.Second}
	hist := make([]int, len(buckets))
	missedHist := make([]int, len(buckets))
	for idx, f := range queueRecordings {
		if idx == 12 || idx == 13 {
			continue
		}
		rec := loadRecording(t, f)
		rungs, settings, _ := queueLadder(rec)
		ladder, _ := ParseLadder(rungs)
		for _, seed := range seedsOf(idx, 9) {
			c, _ := New(Config{Ladder: ladder})
			c.AddService("svc", target)
			r := queueRun(t, rec, c, settings, target.Bound, phaseLen, seed)
			for _, at := range r.lateAt {
				if at < 2*phaseLen || at >= 3*phaseLen {
					continue
				}
				off := at - 2*phaseLen
				for b, e := range buckets {
					if off < e {
						hist[b]++
						if r.att[2] < 0.99 {
							missedHist[b]++
						}
						break
					}
				}
			}
		}
	}
	t.Logf("high-phase late requests by offset (ends %v): %v; in phases missed: %v", buckets, hist, missedHist)
}
