package slo

import (
	"math"
	"slices"
	"time"
)

// Source says who measured a request.
type Source uint8

// The sources of a request's latency.
const (
	// Hook: mmk's hook in the job's process, from the first kernel launch
	// after the job was idle to the synchronisation that ends the request
	// (the GPU's part of it: queueing before the first launch is not seen).
	Hook Source = iota
	// Reported: the service itself, through the hook's
	// mmk_report_request (from the request's arrival to its answer).
	Reported
)

func (s Source) String() string {
	if s == Reported {
		return "reported"
	}
	return "hook"
}

// Sample is one request: when it ended and how long it took.
type Sample struct {
	At, Latency time.Duration
	Source      Source
}

// Stats summarise requests against a bound.
type Stats struct {
	// N requests, Late of them over the bound.
	N, Late int
	// P50 and Pct (the target's percentile) of their latencies; Max the
	// longest.
	P50, Pct, Max time.Duration
	// Rate is requests per second over the span looked at.
	Rate float64
}

// Attainment is the fraction of requests within the bound (1 with none).
func (s Stats) Attainment() float64 {
	if s.N == 0 {
		return 1
	}
	return 1 - float64(s.Late)/float64(s.N)
}

// Point is one interval of a service's history, for plots.
type Point struct {
	// Start of the interval.
	Start time.Duration
	Stats
	// Bound is the bound in force at its end (0: none yet).
	Bound time.Duration
}

// Tracker keeps one service's recent requests and its history. A
// service that reports its own latencies is judged by them, from its
// first report on; until then by the hook's.
type Tracker struct {
	target Target
	bound  time.Duration
	// samples holds the last requests of the source in force, oldest
	// first from head.
	samples []Sample
	head, n int
	// reported: the service has reported a latency of its own.
	reported bool
	// total and late count every request judged since the start.
	total, late uint64
	// The history: closed points and the open interval's samples.
	every   time.Duration
	history []Point
	open    []time.Duration
	openAt  time.Duration
	scratch []time.Duration
}

// Sizes of a tracker.
const (
	// Keep is the requests a tracker keeps for its windows.
	Keep = 8192
	// DefaultEvery is a history point's interval; History the points kept.
	DefaultEvery = time.Second
	History      = 900
)

// NewTracker tracks a service with the given target; bound is the bound
// in force (0 while a ratio target awaits the latency alone).
func NewTracker(target Target, bound time.Duration) *Tracker {
	return &Tracker{target: target, bound: bound, samples: make([]Sample, Keep), every: DefaultEvery, openAt: -1}
}

// Target is the service's objective.
func (t *Tracker) Target() Target { return t.target }

// Bound is the bound in force (0: none yet).
func (t *Tracker) Bound() time.Duration { return t.bound }

// SetBound changes the bound in force (a ratio target once the latency
// alone is known).
func (t *Tracker) SetBound(b time.Duration) { t.bound = b }

// Reported says the service reports its own latencies.
func (t *Tracker) Reported() bool { return t.reported }

// Add records a request. Hook samples are dropped once the service has
// reported its own; the first report replaces the hook's samples kept.
func (t *Tracker) Add(s Sample) {
	if s.Source == Hook && t.reported {
		return
	}
	if s.Source == Reported && !t.reported {
		t.reported = true
		t.head, t.n = 0, 0
	}
	t.samples[(t.head+t.n)%len(t.samples)] = s
	if t.n < len(t.samples) {
		t.n++
	} else {
		t.head = (t.head + 1) % len(t.samples)
	}
	t.total++
	if t.bound > 0 && s.Latency > t.bound {
		t.late++
	}
	t.point(s)
}

// point adds s to the history's open interval, closing it when s falls
// after it.
func (t *Tracker) point(s Sample) {
	if t.openAt < 0 {
		t.openAt = s.At - s.At%t.every
	}
	for s.At >= t.openAt+t.every {
		t.closePoint()
	}
	t.open = append(t.open, s.Latency)
}

// closePoint ends the open interval; an interval without requests adds
// an empty point.
func (t *Tracker) closePoint() {
	p := Point{Start: t.openAt, Bound: t.bound}
	p.Stats = t.stats(t.open, t.every)
	t.history = append(t.history, p)
	if len(t.history) > History {
		t.history = slices.Delete(t.history, 0, len(t.history)-History)
	}
	t.open = t.open[:0]
	t.openAt += t.every
}

// History is the service's points up to now, the last one partial, at
// most History of them; gaps without requests are empty points.
func (t *Tracker) History(now time.Duration) []Point {
	if t.openAt < 0 {
		return nil
	}
	for now >= t.openAt+t.every && len(t.open) > 0 {
		t.closePoint()
	}
	out := slices.Clone(t.history)
	if len(t.open) > 0 {
		out = append(out, Point{Start: t.openAt, Bound: t.bound, Stats: t.stats(t.open, max(now-t.openAt, time.Millisecond))})
	}
	return out
}

// Total is every request judged since the start and the late ones among
// them (late by the bound in force when each ended).
func (t *Tracker) Total() (n, late uint64) { return t.total, t.late }

// Window summarises the requests that ended after from (and at most at
// now). Requests may have been added a little out of order (a service's
// threads report as they finish), so every one kept is looked at. The
// rate is over the part of the span since the first request.
func (t *Tracker) Window(from, now time.Duration) Stats {
	return t.Judged(from, math.MinInt64, now)
}

// Judged is Window over the requests that also arrived after arrived:
// those that came before a change of restraint (or queued behind ones
// that did) say nothing of the rung now in force.
func (t *Tracker) Judged(from, arrived, now time.Duration) Stats {
	t.scratch = t.scratch[:0]
	for i := range t.n {
		s := t.samples[(t.head+i)%len(t.samples)]
		if s.At > from && s.At <= now && s.At-s.Latency > arrived {
			t.scratch = append(t.scratch, s.Latency)
		}
	}
	from = max(from, arrived)
	if o := t.Oldest(); o > from {
		// Nothing before the oldest request kept is known: the rate
		// counts from it (the service's first request, or the ring's
		// oldest at a high rate).
		from = min(o, now)
	}
	return t.stats(t.scratch, now-from)
}

// Drained is when the requests kept that arrived by after had all ended
// (after itself if none was in flight then), at most limit: requests
// that arrive later queue behind none of them. final says that a kept
// request arrived after after, so that with requests ending in the order
// they came no request yet to end moves the time returned (or that limit
// was reached). A service that never drains (overloaded, or never idle)
// is thus judged from when the queue of before ended, not later.
func (t *Tracker) Drained(after, limit time.Duration) (at time.Duration, final bool) {
	at = after
	for i := range t.n {
		s := t.samples[(t.head+i)%len(t.samples)]
		if s.At-s.Latency <= after {
			at = max(at, s.At)
		} else {
			final = true
		}
	}
	if at >= limit {
		return limit, true
	}
	return at, final
}

// Arrivals counts the requests kept that arrived after from and at most
// at to (a request arrives its latency before it ends: a reported one
// when it came in, a hook-measured one at its first launch). Arrivals,
// not ends, measure a service's load: a stall that ends many queued
// requests at once is no rise of load. A request that arrived before to
// and has not ended is not counted.
func (t *Tracker) Arrivals(from, to time.Duration) int {
	n := 0
	for i := range t.n {
		s := t.samples[(t.head+i)%len(t.samples)]
		if a := s.At - s.Latency; a > from && a <= to {
			n++
		}
	}
	return n
}

// Oldest is the end of the oldest request kept (-1: none): the first one,
// until the ring has turned.
func (t *Tracker) Oldest() time.Duration {
	if t.n == 0 {
		return -1
	}
	return t.samples[t.head].At
}

// SetTarget changes the target and the bound in force, keeping the
// requests and the history.
func (t *Tracker) SetTarget(target Target, bound time.Duration) { t.target, t.bound = target, bound }

// Last is the end of the last request kept (-1: none).
func (t *Tracker) Last() time.Duration {
	if t.n == 0 {
		return -1
	}
	return t.samples[(t.head+t.n-1)%len(t.samples)].At
}

// stats summarises lat (sorted in place) over a span.
func (t *Tracker) stats(lat []time.Duration, span time.Duration) Stats {
	st := Stats{N: len(lat)}
	if st.N == 0 {
		return st
	}
	slices.Sort(lat)
	for _, l := range slices.Backward(lat) {
		if t.bound <= 0 || l <= t.bound {
			break
		}
		st.Late++
	}
	st.P50 = Quantile(lat, 50)
	st.Pct = Quantile(lat, t.target.Percentile)
	st.Max = lat[len(lat)-1]
	if span > 0 {
		st.Rate = float64(st.N) / span.Seconds()
	}
	return st
}

// Quantile is the nearest-rank p-th percentile of sorted values (0 for
// none): the smallest value at least p percent of them do not exceed.
func Quantile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(n))) - 1
	return sorted[min(max(k, 0), n-1)]
}
