package slo

import (
	"math/rand/v2"
	"testing"
	"time"
)

// testPlant is a queue model for the controller's tests: services that
// answer one request at a time, first come first served, at Poisson
// arrivals of a rate over time, each request taking a service time drawn
// from what the service shows on the rung in force when it starts (plus
// hidden, time the hook does not see); each reports its latency and the
// hook measures its service time, told to the controller when the
// request ends, at the next tick.
type testPlant struct {
	c        *Controller
	services []*testService
	rng      *rand.Rand
	now      time.Duration
	// levels: the rung in force at each tick; decisions the controller's.
	levels    []int
	decisions []Decision
	// stopsNothing: a suspension stops no offline job (SetSuspended false
	// after each step on a suspending rung), as the standalone server's
	// did of the jobs in its own process group.
	stopsNothing bool
}

// testService is one service of a testPlant.
type testService struct {
	id string
	// times gives a service time on a rung.
	times func(rung int, rng *rand.Rand) time.Duration
	// rate is the arrival rate at a time.
	rate func(at time.Duration) float64
	// hidden is time added to each latency that the hook does not see.
	hidden time.Duration
	// hookOnly: the service does not report its latencies.
	hookOnly bool
	target   Target

	next, free  time.Duration
	queue       []time.Duration
	pending     []testReq
	n, late     int
	bound       time.Duration
	lateAt      []time.Duration
	served      int
	perRungLate map[int]int
}

type testReq struct{ end, service, latency time.Duration }

const testTick = 10 * time.Millisecond

func newTestPlant(t *testing.T, cfg Config, seed uint64, services ...*testService) *testPlant {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPlant{c: c, services: services, rng: rand.New(rand.NewPCG(seed, 3))}
	for _, s := range services {
		s.perRungLate = map[int]int{}
		c.AddService(s.id, s.target)
	}
	return p
}

// run steps the plant for d.
func (p *testPlant) run(d time.Duration) {
	end := p.now + d
	for ; p.now < end; p.now += testTick {
		level := p.c.Level()
		for _, s := range p.services {
			r := s.rate(p.now)
			if s.next == 0 && r > 0 {
				s.next = p.now + time.Duration(p.rng.ExpFloat64()/r*float64(time.Second))
			}
			for r > 0 && s.next <= p.now {
				s.queue = append(s.queue, s.next)
				s.next += time.Duration(p.rng.ExpFloat64() / r * float64(time.Second))
			}
			if r <= 0 {
				s.next = 0
			}
			for len(s.queue) > 0 && max(s.free, s.queue[0]) <= p.now {
				at := s.queue[0]
				s.queue = s.queue[1:]
				start := max(s.free, at)
				d := s.times(level, p.rng)
				s.free = start + d
				lat := s.free - at + s.hidden
				s.pending = append(s.pending, testReq{s.free, d, lat})
				s.n++
				s.served++
				if s.bound > 0 && lat > s.bound {
					s.late++
					s.lateAt = append(s.lateAt, at)
					s.perRungLate[level]++
				}
			}
			k := 0
			for ; k < len(s.pending) && s.pending[k].end <= p.now; k++ {
				q := s.pending[k]
				p.c.Observe(s.id, Sample{At: q.end, Latency: q.service, Source: Hook}, false)
				if !s.hookOnly {
					p.c.Observe(s.id, Sample{At: q.end + s.hidden, Latency: q.latency, Source: Reported}, false)
				}
			}
			s.pending = s.pending[k:]
		}
		if d, ok := p.c.Step(p.now); ok {
			p.decisions = append(p.decisions, d)
		}
		if p.stopsNothing {
			p.c.SetSuspended(!p.c.Rung().Suspend, p.now)
		}
		p.levels = append(p.levels, p.c.Level())
	}
}

// share is the share of ticks since from (a time) spent on each rung.
func (p *testPlant) share(from time.Duration) map[int]float64 {
	out := map[int]float64{}
	k := int(from / testTick)
	for _, l := range p.levels[k:] {
		out[l] += 1 / float64(len(p.levels)-k)
	}
	return out
}

// reset forgets the services' counts (a new phase).
func (p *testPlant) reset() {
	for _, s := range p.services {
		s.n, s.late, s.lateAt = 0, 0, nil
		clear(s.perRungLate)
	}
}

// attainment is a service's share of requests in time since the last
// reset.
func (s *testService) attainment() float64 {
	if s.n == 0 {
		return 1
	}
	return 1 - float64(s.late)/float64(s.n)
}

// steady is a constant rate.
func steady(r float64) func(time.Duration) float64 { return func(time.Duration) float64 { return r } }

// steps is a rate that changes at the given times (rates[i] from at[i]).
func steps(at []time.Duration, rates []float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		r := rates[0]
		for i, a := range at {
			if t >= a {
				r = rates[i]
			}
		}
		return r
	}
}

// uniformTimes draws service times uniformly between lo and hi ms on
// each rung: lo[r], hi[r].
func uniformTimes(lo, hi []float64) func(int, *rand.Rand) time.Duration {
	return func(r int, rng *rand.Rand) time.Duration {
		ms := lo[r] + (hi[r]-lo[r])*rng.Float64()
		return time.Duration(ms * float64(time.Millisecond))
	}
}
