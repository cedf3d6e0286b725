package jobsim

import (
	"maps"
	"math"
	"slices"
)

func (s *jobSim) metrics() {
	r := &s.res
	first, last := math.Inf(1), 0.0
	sum, batch, on := 0.0, 0.0, 0.0
	nBatch, nOn := 0, 0
	for _, j := range s.jobs {
		first = min(first, j.Arrival.Seconds())
		if j.svc != nil {
			r.Requests.Merge(j.svc.serve(j.ID, s.cfg.Seed))
		}
		if !j.done {
			continue
		}
		r.WaitS += j.started - j.Arrival.Seconds()
		jct := j.finish - j.Arrival.Seconds()
		last = max(last, j.finish)
		sum += jct
		r.STP += j.alone / jct
		r.NormJCT = append(r.NormJCT, jct/j.alone)
		if j.Online {
			on += jct / j.alone
			nOn++
		} else {
			batch += jct
			nBatch++
		}
	}
	if n := len(r.NormJCT); n > 0 {
		r.AvgJCTS = sum / float64(n)
		r.WaitS /= float64(n)
		r.Makespan = last - first
	}
	if nBatch > 0 {
		r.BatchJCTS = batch / float64(nBatch)
	}
	if nOn > 0 {
		r.OnlineSlowdown = on / float64(nOn)
	}
	r.SLOAttainment = r.Requests.Attainment()
	r.P99 = r.Requests.Quantile(0.99)
	r.P99JSON = r.P99
	if math.IsInf(r.P99JSON, 1) {
		r.P99JSON = -1
	}
	if n := len(s.predErr); n > 0 {
		slices.Sort(s.predErr)
		r.PredictionError = s.predErr[n/2]
	}
	if r.Makespan > 0 {
		r.JobsPerGPU = s.jobTime / r.Makespan / float64(s.cfg.GPUs)
	}
	total := 0.0
	for _, l := range slices.Sorted(maps.Keys(s.layoutTime)) { // a fixed order: sums are exact to the bit
		t := s.layoutTime[l]
		total += t
		if t > r.MainLayoutShare || (t == r.MainLayoutShare && l < r.MainLayout) {
			r.MainLayout, r.MainLayoutShare = l, t
		}
	}
	if total > 0 {
		r.MainLayoutShare /= total
	}
	slices.Sort(r.NormJCT)
}
