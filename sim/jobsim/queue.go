package jobsim

import "math"

// md1WaitCDF is P(W <= w) for the waiting time W of an M/D/1 queue of
// load rho, w in units of the service time (Erlang's formula,
//
//	P(W <= w) = (1 - rho) sum_{k=0}^{floor(w)} (rho (k - w))^k / k! e^{-rho (k - w)},
//
// exact; its alternating terms lose precision past rho·w of about 30,
// beyond what latency targets of a few service times ask).
func md1WaitCDF(rho, w float64) float64 {
	if w < 0 {
		return 0
	}
	sum, fact := 0.0, 1.0
	for k := 0; k <= int(math.Floor(w)); k++ {
		if k > 0 {
			fact *= float64(k)
		}
		x := rho * (float64(k) - w)
		sum += math.Pow(x, float64(k)) / fact * math.Exp(-x)
	}
	return min(1, max(0, (1-rho)*sum))
}

// md1Quantile is the q-quantile of an M/D/1 queue's response time
// (waiting plus service) in units of the service time; +Inf at rho >= 1
// or where it lies beyond 30 service times.
func md1Quantile(rho, q float64) float64 {
	if rho >= 1 {
		return math.Inf(1)
	}
	if rho <= 0 || md1WaitCDF(rho, 0) >= q {
		return 1
	}
	lo, hi := 0.0, 30.0
	if md1WaitCDF(rho, hi) < q {
		return math.Inf(1)
	}
	for range 60 {
		mid := (lo + hi) / 2
		if md1WaitCDF(rho, mid) >= q {
			hi = mid
		} else {
			lo = mid
		}
	}
	return 1 + hi
}

// minSpeed is the least speed at which a service of request load u
// (busy share alone on the whole GPU), whose requests take latency alone
// on the whole GPU, serves a share q of its requests within target, each
// side an M/D/1 queue: the speed v at which latency/v times the q
// quantile of its response time at load u/v is target. +Inf if no speed
// up to 100 times alone does.
func minSpeed(u, latency, target, q float64) float64 {
	ok := func(v float64) bool { return latency/v*md1Quantile(u/v, q) <= target }
	lo, hi := u, 100.0
	if !ok(hi) {
		return math.Inf(1)
	}
	for range 60 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
