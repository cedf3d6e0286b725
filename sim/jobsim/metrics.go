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
			st := j.svc.serve(j.ID, s.cfg.Seed)
			r.Requests.Merge(st)
			r.addService(j.ID, j.svc, st)
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

// TargetStats are the outcomes of the services of one objective.
type TargetStats struct {
	// Services counts those that got requests, Met those whose
	// objective held.
	Services int `json:"services"`
	Met      int `json:"met"`
	// Requests are their requests.
	Requests      RequestStats `json:"-"`
	SLOAttainment float64      `json:"slo_attainment"`
}

// ServiceResult is one service's outcome.
type ServiceResult struct {
	ID string
	// Target is its objective (Result.ByTarget's key); Held whether it
	// held; Attainment its share of requests within the bound.
	Target     string
	Held       bool
	Attainment float64
	Requests   float64
	// P50 and P99 are its latency at those percentiles over its latency
	// at the same percentile alone on the whole GPU (+Inf where lost
	// requests reach it).
	P50, P99 float64
}

// addService counts one service's outcome.
func (r *Result) addService(id string, v *service, st RequestStats) {
	if st.Requests == 0 {
		return
	}
	r.PerService = append(r.PerService, ServiceResult{ID: id, Target: v.class, Held: st.Held(v.q), Attainment: st.Attainment(),
		Requests: st.Requests, P50: v.overAlone(st, 0.5), P99: v.overAlone(st, 0.99)})
	if r.ByTarget == nil {
		r.ByTarget = map[string]*TargetStats{}
	}
	k := v.class
	t := r.ByTarget[k]
	if t == nil {
		t = &TargetStats{}
		r.ByTarget[k] = t
	}
	held := st.Held(v.q)
	r.Services++
	t.Services++
	if held {
		r.ServicesMet++
		t.Met++
	}
	t.Requests.Merge(st)
	t.SLOAttainment = t.Requests.Attainment()
}
