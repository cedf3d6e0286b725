package jobsim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mmkgpu/mmk/slo"
)

// DefaultSLOFactor is an online job's latency target as a multiple of its
// latency alone on the whole GPU when Config.SLOFactor is unset: MIGER's
// resnet50 service (batch 32) has a 50 ms target against 14.5 ms alone
// on the whole A100 (github.com/Css22/ICPP-MIGER, configs/Job_id.json and
// jobs/profile/online_result/resnet50), 3.45 times.
const DefaultSLOFactor = 3.5

// DefaultTarget names, in Result.ByTarget, the objective of services that
// carry none: p99 within Config.SLOFactor times one request alone.
const DefaultTarget = "default"

// maxRequests bounds the request-level work per service: a service
// expecting more requests than this (openb's services run for weeks) is
// measured on windows of its life drawn at random (requestWindow seconds
// each, a share maxRequests/expected of them), each request standing for
// the inverse of that share; the queue starts empty in a window that
// follows one not drawn. The synthetic workloads' services stay below it
// and are simulated request by request.
const (
	maxRequests   = 200_000
	requestWindow = 30.0
)

// service is an online job's request stream. Requests are sent to a
// service once it is first up (as a load balancer sends traffic to a
// pod once it is ready) and for its lifetime from then: they arrive
// (Poisson) at load/latency per second from start to end, each needing
// latency seconds of the GPU alone (its batch's time at speed 1), and
// are served first come first served at the job's speed while it is up.
// While it restarts, requests wait for it.
type service struct {
	load       float64
	life       float64 // seconds of requests
	start, end float64 // when requests start (+Inf until first up) and end
	latency    float64 // seconds, alone on the whole GPU
	// target is the bound in seconds a request must finish within, and
	// q the share of requests the service's objective wants within it
	// (0.99 for p99); slo is the objective as given.
	target float64
	q      float64
	slo    slo.Target
	// class names the objective in results: its text form, or
	// DefaultTarget for the simulation's default.
	class string
	// alone is the outcome of the service's requests alone on the whole
	// GPU, latencies over one request's (resolve).
	alone RequestStats
	// backlog is the fluid queue the event loop keeps: seconds of work
	// at speed 1 waiting, which sets when the service can leave.
	backlog float64
	// segs is the rate the service works at from each time on (0 while
	// it waits for a place, starts or restarts); restarts are the times
	// it was stopped, losing the requests it held.
	segs     []segment
	restarts []float64
}

// segment is a stretch of a service's life at one rate; shared marks
// an offline job in its instance (on its GPU, without MIG).
type segment struct {
	t, rate float64
	shared  bool
}

// setRate records that from now the service works at rate, or, if it is
// still starting until upAt, at 0 until then. Plans recorded for after
// now are replaced.
func (v *service) setRate(now, upAt, rate float64, shared bool) {
	v.segs = slices.DeleteFunc(v.segs, func(s segment) bool { return s.t >= now })
	add := func(t, r float64) {
		if n := len(v.segs); n > 0 && v.segs[n-1].rate == r && v.segs[n-1].shared == shared {
			return
		}
		v.segs = append(v.segs, segment{t, r, shared})
	}
	if upAt > now {
		add(now, 0)
		add(upAt, rate)
		return
	}
	add(now, rate)
}

// stop records a restart at now: the requests held are lost.
func (v *service) stop(now float64) {
	v.restarts = append(v.restarts, now)
	v.backlog = 0
}

// up records that the service is up at t; the first time, its requests
// start.
func (v *service) up(t float64) {
	if math.IsInf(v.start, 1) {
		v.start, v.end = t, t+v.life
	}
}

// sharedAt reports whether an offline job shared the service's instance
// at t.
func (v *service) sharedAt(t float64) bool {
	k, _ := slices.BinarySearchFunc(v.segs, t, func(s segment, t float64) int {
		if s.t <= t {
			return -1
		}
		return 1
	})
	return k > 0 && v.segs[k-1].shared
}

// inRate is the work arriving per second at time t.
func (v *service) inRate(t float64) float64 {
	if t >= v.start && t < v.end {
		return v.load
	}
	return 0
}

// resolve sets the service's bound from its objective, as mmkd resolves
// one (slo.Target.Resolve): an absolute bound as it is, a ratio times the
// service's latency at the objective's percentile alone, which the
// service's own requests (drawn from seed and id, as serve draws them)
// take through the whole GPU at speed 1 with nothing else on it.
func (v *service) resolve(t slo.Target, id string, seed uint64) error {
	v.slo, v.q = t, t.Percentile/100
	alone := service{load: v.load, life: v.life, start: 0, end: v.life, latency: v.latency, target: v.latency, q: v.q,
		segs: []segment{{t: 0, rate: 1}}}
	var lats []float64
	st := alone.serveWith(id, seed, func(lat float64) { lats = append(lats, lat) })
	v.alone = st
	if t.Ratio == 0 {
		v.target = t.Bound.Seconds()
		return nil
	}
	if len(lats) == 0 {
		// No request arrives in its life: any bound holds.
		v.target = t.Ratio * v.latency
		return nil
	}
	// The exact quantile (nearest rank) of the requests alone: each
	// stands for as many as the others, so ranks are counts.
	slices.Sort(lats)
	q := lats[min(len(lats)-1, max(0, int(math.Ceil(v.q*float64(len(lats))))-1))]
	if math.IsInf(q, 1) || math.IsNaN(q) {
		return fmt.Errorf("service %s: its requests alone never finish (load %v)", id, v.load)
	}
	// As slo.Target.Resolve, in seconds: a request exactly at the
	// quantile alone meets a 1x target whatever the float rounding of
	// its start (the simulation's clock is not the alone pass's).
	v.target = t.Ratio * q * (1 + 1e-9)
	return nil
}

// overAlone is the service's latency at quantile q of st (its requests
// as served) over its latency at q alone: 1 where nothing slowed it.
func (v *service) overAlone(st RequestStats, q float64) float64 {
	a := v.alone.Quantile(q) * v.latency
	if st.Requests == 0 || a == 0 {
		return 1
	}
	return st.Quantile(q) * v.target / a
}

// RequestStats are an online workload's request outcomes.
type RequestStats struct {
	// Requests, Met and Lost count requests: all, those served within
	// their target, and those lost to a restart or never served.
	Requests, Met, Lost float64
	// Shared and SharedMet count the requests that arrived while an
	// offline job shared the service's instance, and those of them
	// served within target.
	Shared, SharedMet float64
	// hist counts requests by latency over target, in buckets of
	// histStep decades from histLow; lost requests are not in it.
	hist []float64
}

const (
	histLow   = -3.0 // 10^-3 of the target
	histStep  = 0.005
	histCount = 1400 // up to 10^4 times the target
)

func (r *RequestStats) add(ratio, n float64) {
	if r.hist == nil {
		r.hist = make([]float64, histCount+1)
	}
	k := histCount
	if ratio > 0 {
		k = int(math.Floor((math.Log10(ratio) - histLow) / histStep))
		k = min(histCount, max(0, k))
	}
	r.hist[k] += n
}

// Merge adds another's counts.
func (r *RequestStats) Merge(o RequestStats) {
	r.Requests += o.Requests
	r.Met += o.Met
	r.Lost += o.Lost
	r.Shared += o.Shared
	r.SharedMet += o.SharedMet
	if o.hist == nil {
		return
	}
	if r.hist == nil {
		r.hist = make([]float64, histCount+1)
	}
	for k, n := range o.hist {
		r.hist[k] += n
	}
}

// Held reports whether a share q of the requests was served within
// target: the objective held.
func (r RequestStats) Held(q float64) bool { return r.Requests == 0 || r.Met >= q*r.Requests*(1-1e-12) }

// Attainment is the share of requests served within their target.
func (r RequestStats) Attainment() float64 {
	if r.Requests == 0 {
		return 1
	}
	return r.Met / r.Requests
}

// Quantile is the latency over target below which a share q of all
// requests finished, +Inf when lost requests reach it.
func (r RequestStats) Quantile(q float64) float64 {
	if r.Requests == 0 {
		return 0
	}
	want, sum := q*r.Requests, 0.0
	for k, n := range r.hist {
		sum += n
		if sum >= want {
			return math.Pow(10, histLow+float64(k+1)*histStep)
		}
	}
	return math.Inf(1)
}

// serve runs the service's requests through the rates and restarts the
// simulation recorded, with arrivals drawn from seed and the job's name
// (the same requests, from its start, under every policy).
func (v *service) serve(id string, seed uint64) RequestStats { return v.serveWith(id, seed, nil) }

// serveWith is serve calling each, when set, with every request served
// (its latency in seconds; lost requests are not).
func (v *service) serveWith(id string, seed uint64, each func(lat float64)) RequestStats {
	var st RequestStats
	arrival := v.start
	if v.load <= 0 || v.latency <= 0 || math.IsInf(arrival, 1) {
		return st
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	lam := v.load / v.latency
	share := min(1, maxRequests/(lam*(v.end-arrival)))
	seg, ri := 0, 0 // segments starting at or before the last start; restarts passed
	free := arrival // when the server has done what it holds
	// finish is when work started at t is done, walking the rates.
	finish := func(t, work float64) float64 {
		for seg < len(v.segs) && v.segs[seg].t <= t {
			seg++
		}
		for k := seg; ; k++ {
			r, next := 0.0, math.Inf(1)
			if k > 0 {
				r = v.segs[k-1].rate
			}
			if k < len(v.segs) {
				next = v.segs[k].t
			}
			if r > 0 && t+work/r <= next {
				return t + work/r
			}
			if math.IsInf(next, 1) {
				return math.Inf(1)
			}
			if r > 0 {
				work -= r * (next - t)
			}
			t = next
		}
	}
	n := 1 / share // requests each simulated one stands for
	drawn := true  // whether the window before was simulated
	for w := arrival; w < v.end; w += requestWindow {
		if share < 1 && rng.Float64() >= share {
			drawn = false
			continue
		}
		if !drawn {
			free = w // its queue is not known: taken as empty
		}
		drawn = true
		wEnd := min(w+requestWindow, v.end)
		// Poisson arrivals are memoryless: each window draws its own.
		for t := w + rng.ExpFloat64()/lam; t < wEnd; t += rng.ExpFloat64() / lam {
			st.Requests += n
			for ri < len(v.restarts) && v.restarts[ri] <= t {
				ri++
			}
			start := max(t, free)
			done := finish(start, v.latency)
			if ri < len(v.restarts) && v.restarts[ri] < done {
				st.Lost += n
				free = v.restarts[ri]
				continue
			}
			if math.IsInf(done, 1) {
				st.Lost += n
				continue
			}
			free = done
			lat := done - t
			if each != nil {
				each(lat)
			}
			shared := v.sharedAt(t)
			if shared {
				st.Shared += n
			}
			if lat <= v.target {
				st.Met += n
				if shared {
					st.SharedMet += n
				}
			}
			st.add(lat/v.target, n)
		}
	}
	return st
}
