package slosuite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// The queue model of a run. Each service answers one request at a time,
// first come first served (as the SLO benchmark's services do, and as
// slo's forecast assumes); its arrivals are Poisson at its shape's rate;
// a request that starts under a setting takes a service time drawn from
// what the service showed under that setting beside the mix
// (calibration), at a quantile fixed per request, times its tail factor.
// Every policy of a scenario (each static setting, the controller) meets
// the same arrivals, quantiles and tail factors. slo's
// TestQueueModelMatchesGPU checks the model against the GPU's windows.

// Tick is the run's step: the controller is stepped, and requests that
// ended delivered to it, once a Tick.
const Tick = 10 * time.Millisecond

// Lag is how long after a change of rung a request that starts still
// takes the service time of the rung before: the offline kernels already
// on the GPU run on (a suspension stops a process, not its kernels in
// flight).
const Lag = 50 * time.Millisecond

// request is one request of a run: when it arrives, the quantile its
// service time is drawn at, and its tail factor.
type request struct {
	at   time.Duration
	u    float64
	tail float64
}

// plant is a scenario's services as measured beside its mix.
type plant struct {
	sc   *Scenario
	mix  *Mix
	reqs [][]request // per service, by arrival
}

// newPlant draws the scenario's requests (from its seed).
func newPlant(cal *Calibration, sc *Scenario) (*plant, error) {
	m := cal.Mix(sc.Mix)
	if m == nil {
		return nil, fmt.Errorf("scenario %s #%d: mix %q is not calibrated", sc.Split, sc.ID, sc.Mix)
	}
	p := &plant{sc: sc, mix: m}
	for i, sv := range sc.Services {
		rng := rand.New(rand.NewPCG(sc.Seed, 0xa221+uint64(i)))
		var rs []request
		peak := sv.Load.Max()
		if peak <= 0 {
			p.reqs = append(p.reqs, nil)
			continue
		}
		// Thinning: candidates at the peak rate, each kept with the
		// shape's rate then over the peak.
		for t := time.Duration(0); ; {
			t += time.Duration(rng.ExpFloat64() / peak * float64(time.Second))
			if t >= sc.RunFor() {
				break
			}
			keep := rng.Float64() < sv.Load.Rate(t)/peak
			u := rng.Float64()
			tail := 1.0
			if tf := rng.Float64(); sv.TailShare > 0 && tf < sv.TailShare {
				tail = sv.TailMin + (sv.TailMax-sv.TailMin)*tf/sv.TailShare
			}
			if keep {
				rs = append(rs, request{at: t, u: u, tail: tail})
			}
		}
		p.reqs = append(p.reqs, rs)
	}
	return p, nil
}

// serviceTime is the time request r of service i takes under setting.
func (p *plant) serviceTime(i int, setting string, r request) time.Duration {
	s := p.mix.Settings[setting].Service[p.sc.Services[i].Name]
	d := s[min(int(r.u*float64(len(s))), len(s)-1)]
	return time.Duration(float64(d) * r.tail)
}

// Result is one policy's run of a scenario.
type Result struct {
	// Policy names it: a static setting, or the controller's name.
	Policy string
	// N and Late count each segment's requests (by arrival) per service:
	// [segment][service].
	N, Late [][]int
	// Speed is the trainers' mean speed against alone over the run;
	// SegSpeed, per segment (a request-scoped mask's follows each
	// segment's load, a controller's its rungs there).
	Speed    float64
	SegSpeed []float64
	// OnRung is the time on each rung (a controller's run; nil for a
	// static setting).
	OnRung []time.Duration
	// Changes counts the controller's changes of rung; Decisions are
	// its decisions.
	Changes   int
	Decisions []slo.Decision
}

// Held reports whether every service of segment j had its target's
// share of requests in time (a segment without requests holds).
func (r *Result) Held(sc *Scenario, j int) bool {
	for i, sv := range sc.Services {
		n, late := r.N[j][i], r.Late[j][i]
		if n > 0 && float64(n-late) < sv.Target.Percentile/100*float64(n) {
			return false
		}
	}
	return true
}

// Attainment is the lowest share in time of the scenario's services
// over the whole run.
func (r *Result) Attainment() float64 {
	low := 1.0
	for i := range r.N[0] {
		n, late := 0, 0
		for j := range r.N {
			n, late = n+r.N[j][i], late+r.Late[j][i]
		}
		if n > 0 {
			low = min(low, 1-float64(late)/float64(n))
		}
	}
	return low
}

func (p *plant) newResult(policy string) *Result {
	r := &Result{Policy: policy}
	for range p.sc.SegmentCount() {
		r.N = append(r.N, make([]int, len(p.sc.Services)))
		r.Late = append(r.Late, make([]int, len(p.sc.Services)))
	}
	return r
}

// count adds a request that arrived at at with latency lat.
func (p *plant) count(r *Result, i int, at, lat time.Duration) {
	j := min(int(at/p.sc.SegmentLength()), p.sc.SegmentCount()-1)
	r.N[j][i]++
	if lat > p.sc.Services[i].Target.Bound {
		r.Late[j][i]++
	}
}

// Static runs the scenario with one setting throughout: the trainers at
// its speed, a request-scoped mask's at the share of the run some
// service was busy (Mix.SpeedAt).
func (p *plant) Static(setting string) *Result {
	r := p.newResult(setting)
	var spans []span
	for i, rs := range p.reqs {
		var free time.Duration
		for _, q := range rs {
			start := max(free, q.at)
			free = start + p.serviceTime(i, setting, q)
			p.count(r, i, q.at, free-q.at)
			spans = append(spans, span{start.Seconds(), free.Seconds()})
		}
	}
	r.Speed = p.mix.Settings[setting].Speed
	for range p.sc.SegmentCount() {
		r.SegSpeed = append(r.SegSpeed, r.Speed)
	}
	if p.mix.PerRequest(setting) {
		seg := p.sc.SegmentLength()
		r.Speed = p.mix.SpeedAt(setting, covered(spans, 0, p.sc.RunFor().Seconds()))
		for j := range r.SegSpeed {
			from := time.Duration(j) * seg
			r.SegSpeed[j] = p.mix.SpeedAt(setting, covered(spans, from.Seconds(), (from+seg).Seconds()))
		}
	}
	return r
}

// Controlled runs the scenario under a controller with the given
// config, its ladder's rungs named as the calibration's settings
// (Ladder.Strings: "priority", "tpcs=0.5", "suspend"). Each service
// reports its latencies (arrival to answer) and the hook measures its
// service times; the controller hears of a request when it ends, at
// the next Tick.
//
// The kernel scheduler holds each suspension to a stop bound (bound;
// zero: slo.DefaultStopBound, mmkd's): once the bound ends a stop, the
// trainers run as on priority (the suspending rung has no other
// restraint) until it allows one again, and so they do here.
func (p *plant) Controlled(name string, cfg slo.Config, seeded bool, bound slo.StopBound) (*Result, error) {
	if bound == (slo.StopBound{}) {
		bound = slo.DefaultStopBound
	}
	if err := bound.Check(); err != nil {
		return nil, fmt.Errorf("scenario %s #%d: stop bound: %w", p.sc.Split, p.sc.ID, err)
	}
	c, err := slo.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("scenario %s #%d: %w", p.sc.Split, p.sc.ID, err)
	}
	rungs := c.Ladder().Strings()
	for _, s := range rungs {
		if p.mix.Settings[s] == nil {
			return nil, fmt.Errorf("scenario %s #%d: rung %s was not calibrated beside mix %s", p.sc.Split, p.sc.ID, s, p.sc.Mix)
		}
	}
	ids := make([]string, len(p.sc.Services))
	for i, sv := range p.sc.Services {
		ids[i] = fmt.Sprintf("%s-%d", sv.Name, i)
		c.AddService(ids[i], sv.Target)
	}
	if seeded {
		// Every rung's service times known from the start (the
		// calibration's, a random 512 of them, with the service's tail):
		// what a controller that need not learn the plant would do.
		rng := rand.New(rand.NewPCG(p.sc.Seed, 0x5eed))
		for i, sv := range p.sc.Services {
			for l, rung := range rungs {
				all := p.mix.Settings[rung].Service[sv.Name]
				times := make([]time.Duration, slo.ServiceTimesKept)
				for k := range times {
					times[k] = all[rng.IntN(len(all))]
					if sv.TailShare > 0 && rng.Float64() < sv.TailShare {
						times[k] = time.Duration(float64(times[k]) * (sv.TailMin + (sv.TailMax-sv.TailMin)*rng.Float64()))
					}
				}
				c.Seed(ids[i], l, times, 0)
			}
		}
	}
	r := p.newResult(name)
	r.OnRung = make([]time.Duration, len(rungs))
	// The setting the trainers run under: the rung's, but priority where
	// the stop bound ends a suspension (the trainers stop and run
	// together: one entry of the ledger).
	released := "priority"
	if p.mix.Settings[released] == nil {
		released = rungs[0]
	}
	ledger := slo.NewStopLedger(bound)
	const trainers = 1
	settingAt := func(now time.Duration) string {
		l := c.Level()
		if !c.Ladder()[l].Suspend {
			ledger.Resumed(trainers, now)
			return rungs[l]
		}
		if ledger.Allow(trainers, now) {
			ledger.Stopped(trainers, now)
			return rungs[l]
		}
		return released
	}
	type change struct {
		at      time.Duration
		setting string
	}
	changes := []change{{0, settingAt(0)}}
	// at is the setting whose service times a request that starts at t
	// takes: the one in force Lag before.
	at := func(t time.Duration) string {
		s := changes[0].setting
		for _, ch := range changes[1:] {
			if ch.at+Lag > t {
				break
			}
			s = ch.setting
		}
		return s
	}
	// The trainers' speed under each setting while no service is busy
	// and while one is (the same but for a request-scoped mask: SpeedAt).
	idle, inRequest := map[string]float64{}, map[string]float64{}
	for _, s := range append(slices.Clone(rungs), released) {
		idle[s], inRequest[s] = p.mix.SpeedAt(s, 0), p.mix.SpeedAt(s, 1)
	}
	next := make([]int, len(p.reqs)) // next request to start, per service
	free := make([]time.Duration, len(p.reqs))
	type done struct{ end, service, lat time.Duration }
	pending := make([][]done, len(p.reqs)) // started, not yet told
	speed := 0.0
	ticks := 0
	segSpeed, segTicks := make([]float64, p.sc.SegmentCount()), make([]int, p.sc.SegmentCount())
	for now := time.Duration(0); ; now += Tick {
		busy, serving := false, false
		for i, rs := range p.reqs {
			for next[i] < len(rs) && max(free[i], rs[next[i]].at) <= now {
				q := rs[next[i]]
				start := max(free[i], q.at)
				d := p.serviceTime(i, at(start), q)
				free[i] = start + d
				pending[i] = append(pending[i], done{free[i], d, free[i] - q.at})
				p.count(r, i, q.at, free[i]-q.at)
				next[i]++
			}
			k := 0
			for ; k < len(pending[i]) && pending[i][k].end <= now; k++ {
				e := pending[i][k]
				c.Observe(ids[i], slo.Sample{At: e.end, Latency: e.service, Source: slo.Hook}, false)
				c.Observe(ids[i], slo.Sample{At: e.end, Latency: e.lat, Source: slo.Reported}, false)
			}
			pending[i] = pending[i][k:]
			busy = busy || next[i] < len(rs) || len(pending[i]) > 0
			// The last request started is in service until free[i].
			serving = serving || free[i] > now
		}
		if now >= p.sc.RunFor() && !busy {
			break
		}
		if d, ok := c.Step(now); ok {
			r.Changes++
			r.Decisions = append(r.Decisions, d)
		}
		cur := settingAt(now)
		if cur != changes[len(changes)-1].setting {
			changes = append(changes, change{now, cur})
		}
		if now < p.sc.RunFor() {
			r.OnRung[c.Level()] += Tick
			v := idle[cur]
			if serving {
				v = inRequest[cur]
			}
			speed += v
			ticks++
			j := min(int(now/p.sc.SegmentLength()), len(segSpeed)-1)
			segSpeed[j] += v
			segTicks[j]++
		}
	}
	r.Speed = speed / float64(max(ticks, 1))
	for j := range segSpeed {
		r.SegSpeed = append(r.SegSpeed, segSpeed[j]/float64(max(segTicks[j], 1)))
	}
	return r, nil
}
