package slo

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// recorded are the latencies of a resnet50 batch-32 service at 20
// requests/s on an H100 (testdata/r50-b32-h100.json): alone, beside three
// trainers at MPS client priority 1 (mps-prio) and under time slicing
// (baseline).
func recorded(t *testing.T) map[string][]time.Duration {
	t.Helper()
	b, err := os.ReadFile("testdata/r50-b32-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Phases map[string][]float64 `json:"phases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string][]time.Duration{}
	for k, v := range f.Phases {
		for _, x := range v {
			out[k] = append(out[k], time.Duration(x*float64(time.Millisecond)))
		}
	}
	return out
}

// phase is a stretch of a plant's run: Poisson requests at rate, whose
// latency is drawn from latency(rung).
type phase struct {
	dur     time.Duration
	rate    float64
	latency func(rung int) []time.Duration
}

// trace is what a run saw: per phase, requests and late ones against the
// bound, and the time spent on each rung.
type trace struct {
	n, late   []int
	onRung    [][]time.Duration
	decisions []Decision
}

// run drives the controller with one service "svc" through the phases in
// steps of 10 ms: each request's latency is drawn from the phase's
// distribution for the rung in force when it arrived, and observed when
// it ends.
func run(t *testing.T, c *Controller, bound time.Duration, phases []phase, seed uint64) trace {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var tr trace
	var pending []req
	now, next := time.Duration(0), time.Duration(0)
	for pi, ph := range phases {
		tr.n, tr.late = append(tr.n, 0), append(tr.late, 0)
		tr.onRung = append(tr.onRung, make([]time.Duration, len(c.Config().Ladder)))
		end := now + ph.dur
		next = now + time.Duration(rng.ExpFloat64()/ph.rate*float64(time.Second))
		for ; now < end; now += 10 * time.Millisecond {
			for next <= now {
				d := ph.latency(c.Level())
				lat := d[rng.IntN(len(d))]
				pending = append(pending, req{next + lat, lat})
				tr.n[pi]++
				if lat > bound {
					tr.late[pi]++
				}
				next += time.Duration(rng.ExpFloat64() / ph.rate * float64(time.Second))
			}
			pending = deliver(c, pending, now, Hook)
			if d, ok := c.Step(now); ok {
				tr.decisions = append(tr.decisions, d)
			}
			tr.onRung[pi][c.Level()] += 10 * time.Millisecond
		}
	}
	return tr
}

// req is a request of a plant or a replay: when it ends and its latency.
type req struct{ end, lat time.Duration }

// deliver observes the pending requests that ended by now (as service
// "svc", measured by src) and returns the rest.
func deliver(c *Controller, pending []req, now time.Duration, src Source) []req {
	kept := pending[:0]
	for _, r := range pending {
		if r.end <= now {
			c.Observe("svc", Sample{At: r.end, Latency: r.lat, Source: src}, false)
		} else {
			kept = append(kept, r)
		}
	}
	return kept
}

func constant(d time.Duration) func(int) []time.Duration {
	return func(int) []time.Duration { return []time.Duration{d} }
}

// lateBelow: below rung need, 6 % of the requests take 200 ms (past a
// 100 ms bound), the rest 10 ms; from it on, all take 10 ms.
func lateBelow(need int) func(int) []time.Duration {
	return func(r int) []time.Duration {
		if r >= need {
			return []time.Duration{10 * ms}
		}
		return lateIn(100, 6, 10*ms, 200*ms)
	}
}

// lateIn is n latencies, k of them late and the rest typical.
func lateIn(n, k int, typical, late time.Duration) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = typical
		if i < k {
			d[i] = late
		}
	}
	return d
}

// onPriority: on priority a request takes one of prio's latencies; on
// every rung above, above.
func onPriority(prio func(int) []time.Duration, above time.Duration) func(int) []time.Duration {
	return func(r int) []time.Duration {
		if r >= 1 {
			return []time.Duration{above}
		}
		return prio(r)
	}
}

// oneIn20Late: one request in twenty takes 40 ms (past a 25 ms bound),
// the rest typical.
func oneIn20Late(typical time.Duration) func(int) []time.Duration {
	return func(int) []time.Duration {
		d := make([]time.Duration, 20)
		for i := range d {
			d[i] = typical
		}
		d[0] = 40 * ms
		return d
	}
}

// TestControllerTightensUntilHeld: a service over its target climbs the
// ladder one rung per tick once the last change settled, each decision
// naming the service and its numbers. At the top, a service the climb
// helped (15 ms against 20 ms) but that still misses is said not held and
// the top rung stays.
func TestControllerTightensUntilHeld(t *testing.T) {
	// Its top rung holds launches (a suspension would measure the service
	// alone: TestControllerMissesAlone).
	lad := DefaultLadder()[:4]
	c, err := New(Config{Start: -1, Ladder: lad})
	if err != nil {
		t.Fatal(err)
	}
	c.AddService("svc", MustParse("p99=10ms"))
	top := len(lad) - 1
	helps := func(r int) []time.Duration {
		if r == top {
			return []time.Duration{15 * ms}
		}
		return []time.Duration{20 * ms}
	}
	tr := run(t, c, 10*ms, []phase{{20 * time.Second, 50, helps}}, 1)
	if c.Level() != top || len(tr.decisions) != top {
		t.Fatalf("level %d after %d decisions, want %d: %+v", c.Level(), len(tr.decisions), top, tr.decisions)
	}
	for i, d := range tr.decisions {
		if d.From != i || d.To != i+1 || d.Service != "svc" || !strings.Contains(d.Reason, "tighten: svc p99 20ms against 10ms") {
			t.Errorf("decision %d: %+v", i, d)
		}
	}
	if gap := tr.decisions[1].At - tr.decisions[0].At; gap > c.Config().Settle+2*c.Config().Tick {
		t.Errorf("the second rung came %v after the first", gap)
	}
	st := c.Status(20 * time.Second)
	if st[0].State != NotHeld || !strings.Contains(st[0].Detail, "p99 15ms") || !strings.Contains(st[0].Detail, "at the top rung (hold)") {
		t.Errorf("status %+v", st[0])
	}
}

// TestControllerFutileClimb: a service whose latency no rung changes (its
// misses are not the offline jobs' doing) makes the controller climb to
// the top, see that it did not help, and go back to where it started; the
// service is left alone until its load changes.
func TestControllerFutileClimb(t *testing.T) {
	// Its top rung holds launches (a suspension would measure the service
	// alone: TestControllerMissesAlone).
	lad := DefaultLadder()[:4]
	c, _ := New(Config{Start: -1, Ladder: lad})
	c.AddService("svc", MustParse("p99=10ms"))
	tr := run(t, c, 10*ms, []phase{{20 * time.Second, 50, constant(20 * ms)}, {20 * time.Second, 200, constant(20 * ms)}}, 1)
	top := len(lad) - 1
	var futile []Decision
	for _, d := range tr.decisions {
		if strings.Contains(d.Reason, "futile: svc p99 20ms at hold against 20ms at priority: restraining the offline jobs does not help it") {
			futile = append(futile, d)
		}
	}
	if len(futile) != 2 || futile[0].From != top || futile[0].To != 0 {
		t.Fatalf("futile decisions %+v of %+v", futile, tr.decisions)
	}
	// Left alone while its load stays; judged again once it quadrupled.
	if futile[1].At < 20*time.Second {
		t.Errorf("climbed again at %v, before the load changed", futile[1].At)
	}
	if on := tr.onRung[0][0]; on < 15*time.Second {
		t.Errorf("first phase: %v on rung 0, want most of it", on)
	}
	// Its status says so: a move to another GPU would not help it either.
	c.Step(40*time.Second + time.Second)
	if st := c.Status(40*time.Second + time.Second)[0]; st.State != NotHeld || !st.Futile {
		t.Errorf("status after the futile climb: %s, futile %v (%s)", st.State, st.Futile, st.Detail)
	}
}

// TestControllerRelaxes: with every request well within its target, the
// controller steps down one rung per calm spell.
func TestControllerRelaxes(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=10ms"))
	c.level = 3
	tr := run(t, c, 10*ms, []phase{{18 * time.Second, 50, constant(2 * ms)}}, 1)
	if c.Level() != 0 || len(tr.decisions) != 3 {
		t.Fatalf("level %d after %+v", c.Level(), tr.decisions)
	}
	for i, d := range tr.decisions {
		if d.To != 2-i || d.Service != "" || !strings.Contains(d.Reason, "relax: every service well within its target for 5s") {
			t.Errorf("decision %d: %+v", i, d)
		}
	}
}

// TestControllerOnRecordedLatencies replays the H100 service's recorded
// latencies: beside trainers at priority 1 (rungs 0 and 1 here) its p90
// is 27 ms, alone (rung 2 and above) 12.6 ms; the target is p90 = 20 ms.
// The controller must find rung 2, stay there almost all the time, try
// the rungs below once every Remember, and keep the target.
func TestControllerOnRecordedLatencies(t *testing.T) {
	rec := recorded(t)
	byRung := func(r int) []time.Duration {
		if r >= 2 {
			return rec["alone"]
		}
		return rec["mps-prio"]
	}
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p90=20ms"))
	tr := run(t, c, 20*ms, []phase{{10 * time.Minute, 20, byRung}}, 7)
	on := tr.onRung[0]
	t.Logf("time on each rung %v, %d decisions, %d of %d late", on, len(tr.decisions), tr.late[0], tr.n[0])
	total := 10 * time.Minute
	if frac := float64(on[2]) / float64(total); frac < 0.8 {
		t.Errorf("on rung 2 %.0f %% of the time (%v)", 100*frac, on)
	}
	if frac := float64(on[3]+on[4]) / float64(total); frac > 0.05 {
		t.Errorf("above rung 2 %.1f %% of the time (%v)", 100*frac, on)
	}
	if att := 1 - float64(tr.late[0])/float64(tr.n[0]); att < 0.9 {
		t.Errorf("attainment %.3f below the target's 0.9 (%d of %d late)", att, tr.late[0], tr.n[0])
	}
	// A rung that missed is not tried again at the same load for
	// Remember (5 min): one try of the rung below in 10 min, or two.
	var downs int
	for _, d := range tr.decisions {
		if d.To < d.From {
			downs++
		}
	}
	if downs == 0 || downs > 2 {
		t.Errorf("%d step downs in %v at a steady load: %+v", downs, total, tr.decisions)
	}
}

// TestControllerFollowsLoad: low load (10/s, alone latencies on every
// rung), high load (40/s, priority's latencies below rung 2), low again.
// The controller climbs in the high phase and is back on rung 0 soon
// after the load falls.
func TestControllerFollowsLoad(t *testing.T) {
	rec := recorded(t)
	low := func(int) []time.Duration { return rec["alone"] }
	high := func(r int) []time.Duration {
		if r >= 2 {
			return rec["alone"]
		}
		return rec["mps-prio"]
	}
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p90=20ms"))
	tr := run(t, c, 20*ms, []phase{{60 * time.Second, 10, low}, {60 * time.Second, 40, high}, {60 * time.Second, 10, low}}, 3)
	t.Logf("time on each rung, by phase: %v", tr.onRung)
	if tr.onRung[0][0] < 55*time.Second {
		t.Errorf("low load at first: %v on rung 0", tr.onRung[0][0])
	}
	if tr.onRung[1][2] < 45*time.Second {
		t.Errorf("high load: %v on rung 2 (%v)", tr.onRung[1][2], tr.onRung[1])
	}
	if tr.onRung[2][0] < 40*time.Second {
		t.Errorf("low load again: %v on rung 0 (%v)", tr.onRung[2][0], tr.onRung[2])
	}
	for i := range tr.n {
		if att := 1 - float64(tr.late[i])/float64(tr.n[i]); att < 0.9 {
			t.Errorf("phase %d: attainment %.3f", i, att)
		}
	}
}

// TestControllerUnattainable: a service that misses an absolute target
// even alone is said to, with its numbers, and makes nobody climb.
func TestControllerUnattainable(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=5ms"))
	for i := range 60 {
		c.Observe("svc", Sample{At: time.Duration(i) * 10 * ms, Latency: 8 * ms}, true)
	}
	if _, ok := c.Step(time.Second); ok || c.Level() != 0 {
		t.Fatalf("climbed to %d", c.Level())
	}
	st := c.Status(time.Second)[0]
	if st.State != Unattainable || st.Detail != "p99 alone 8ms > bound 5ms (60 requests alone, 100.0 % late)" || st.Alone != 8*ms || st.AloneN != 60 {
		t.Errorf("%+v", st)
	}
}

// TestControllerUnattainableNeedsEvidence: one request of 60 alone past
// the bound puts a p99 alone past it, but is no proof that the target is
// out of reach (a 1 % budget gives one late of 60 or more with
// probability 0.45): the service is not said unattainable, and its budget
// is not raised; four of 60 are.
func TestControllerUnattainableNeedsEvidence(t *testing.T) {
	for _, tc := range []struct {
		late int
		want State
	}{{1, Idle}, {4, Unattainable}} {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=5ms"))
		for i := range 60 {
			l := 3 * ms
			if i < tc.late {
				l = 8 * ms
			}
			c.Observe("svc", Sample{At: time.Duration(i) * 10 * ms, Latency: l}, true)
		}
		c.Step(time.Second)
		if st := c.Status(time.Second)[0]; (st.State == Unattainable) != (tc.want == Unattainable) {
			t.Errorf("%d of 60 late alone: %s (%s), want unattainable: %v", tc.late, st.State, st.Detail, tc.want == Unattainable)
		}
	}
}

// TestControllerProbesARatioTarget: a ratio target without a latency
// alone makes the controller hold the top rung for a probe, whose
// requests set the bound; then it returns to its rung.
func TestControllerProbesARatioTarget(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=2x"))
	now := time.Duration(0)
	feed := func(until time.Duration, lat time.Duration) {
		for ; now < until; now += 10 * ms {
			c.Observe("svc", Sample{At: now, Latency: lat}, false)
		}
	}
	feed(time.Second, 9*ms)
	d, ok := c.Step(now)
	if !ok || d.To != len(DefaultLadder())-1 || !strings.Contains(d.Reason, "probe: svc has a ratio target (p99=2x)") || !c.Probing() {
		t.Fatalf("%+v %v", d, ok)
	}
	if st := c.Status(now)[0]; st.State != Calibrating && st.State != Idle {
		t.Errorf("before the probe: %+v", st)
	}
	feed(now+c.Config().Settle+c.Config().Probe+time.Millisecond, 4*ms)
	d, ok = c.Step(now)
	if !ok || d.To != 0 || !strings.Contains(d.Reason, "probe over: svc alone p99 4ms") || c.Probing() {
		t.Fatalf("%+v %v", d, ok)
	}
	if st := c.Status(now)[0]; st.Bound != 8*ms {
		t.Errorf("bound %v, want 8ms", st.Bound)
	}
	if sv := c.needsProbe(now + time.Hour); sv != nil {
		t.Error("a calibrated service asks for another probe")
	}
}

// TestControllerNoTargetIsMeasuredOnly: an online job without a target is
// tracked and never makes the controller climb.
func TestControllerNoTargetIsMeasuredOnly(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", Target{})
	tr := run(t, c, time.Hour, []phase{{10 * time.Second, 50, constant(time.Second)}}, 1)
	if len(tr.decisions) != 0 {
		t.Fatalf("%+v", tr.decisions)
	}
	if st := c.Status(10 * time.Second)[0]; st.Recent.N == 0 || st.State != Met || st.Detail != "no target" {
		t.Errorf("%+v", st)
	}
}

// TestConfigChecks: bad settings are refused.
func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{{Headroom: 1}, {Tick: -1}, {Calm: time.Minute, MaxCalm: time.Second}} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v was taken", c)
		}
	}
}

// TestBinomialTail against values worked out by hand.
func TestBinomialTail(t *testing.T) {
	tests := []struct {
		n, k int
		p    float64
		want float64
	}{
		{20, 2, 0.01, 1 - 0.8179069375972307 - 0.16523372476711732},
		{10, 0, 0.5, 1},
		{10, 11, 0.5, 0},
		{10, 10, 0.5, 1.0 / 1024},
		{4, 2, 0.5, 11.0 / 16},
		{5000, 60, 0.01, 0.09117523546410766}, // exact, with rationals
	}
	for _, tc := range tests {
		if got := BinomialTail(tc.n, tc.k, tc.p); math.Abs(got-tc.want) > 1e-3*max(tc.want, 1e-3) {
			t.Errorf("P(X >= %d | %d, %g) = %v, want %v", tc.k, tc.n, tc.p, got, tc.want)
		}
	}
}

// TestControllerSteadyHighRate: a steady load beyond what the tracker
// keeps of a window (3,000 requests/s, its ring of Keep turning in under
// 3 s) is no rise of load: no rung moves for a service comfortably within
// its target.
func TestControllerSteadyHighRate(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=10ms"))
	tr := run(t, c, 10*ms, []phase{{30 * time.Second, 3000, constant(7500 * time.Microsecond)}}, 1)
	if len(tr.decisions) != 0 {
		t.Errorf("%d decisions at a steady load: %+v", len(tr.decisions), tr.decisions[0])
	}
	if st := c.Status(30 * time.Second)[0]; st.Recent.Rate < 2700 || st.Recent.Rate > 3300 {
		t.Errorf("rate %.0f/s, want about 3000", st.Recent.Rate)
	}
}

// TestControllerAloneFollowsTheSource: once a service reports its own
// latencies, its latency alone is its own too (the hook's, shorter, is
// dropped), and so is a ratio target's bound.
func TestControllerAloneFollowsTheSource(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p90=1.5x"))
	at := time.Duration(0)
	for range 100 {
		at += ms
		c.Observe("svc", Sample{At: at, Latency: ms, Source: Hook}, true)
	}
	if b := c.Status(at)[0].Bound; b != 1500*time.Microsecond {
		t.Fatalf("bound %v from the hook's requests alone", b)
	}
	for range 100 {
		at += ms
		c.Observe("svc", Sample{At: at, Latency: 3 * ms, Source: Reported}, true)
	}
	if st := c.Status(at)[0]; st.Bound != 4500*time.Microsecond || st.AloneN != 100 || !st.Reported {
		t.Errorf("after the service's own reports: %+v", st)
	}
}

// TestControllerSetTargetKeepsTheService: a new target keeps the
// service's requests and what it measured alone.
func TestControllerSetTargetKeepsTheService(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=10ms"))
	for i := range 60 {
		c.Observe("svc", Sample{At: time.Duration(i) * ms, Latency: 2 * ms}, true)
	}
	c.SetTarget("svc", MustParse("p99=2x"))
	st := c.Status(time.Second)[0]
	if st.Total != 60 || st.AloneN != 60 || st.Bound != 4*ms || st.Target != MustParse("p99=2x") {
		t.Errorf("%+v", st)
	}
}

// TestSwingCountsArrivals: a stall that ends many queued requests at once
// is no rise of load (the requests arrived at a steady 8/s), and a
// difference of counts that steady Poisson arrivals give often is none
// either; a doubling of arrivals is a rise.
func TestSwingCountsArrivals(t *testing.T) {
	target := MustParse("p99=2s")
	cases := []struct {
		name string
		// arrivals per second before now-2s (over 5 s) and in the last 2 s;
		// stall: the last 2 s's ends also take the 1.5 s of arrivals
		// before them, held by a stall.
		before, short float64
		stall         bool
		want          func(float64) bool
	}{
		{"steady", 8, 8, false, func(f float64) bool { return f == 1 }},
		{"a stall ends a queue at once", 8, 8, true, func(f float64) bool { return f == 1 }},
		{"1.8x on few requests", 2.8, 5, false, func(f float64) bool { return f == 1 }},
		{"a doubling", 8, 16, false, func(f float64) bool { return f >= 1.9 }},
		{"a halving", 16, 8, false, func(f float64) bool { return f > 0 && f <= 0.55 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := New(Config{Start: -1})
			c.AddService("svc", target)
			now := 20 * time.Second
			add := func(from, to time.Duration, rate float64) {
				gap := time.Duration(float64(time.Second) / rate)
				for a := from + gap/2; a < to; a += gap {
					lat, end := 10*ms, a+10*ms
					if tc.stall && a >= now-3500*time.Millisecond && a < now-2*time.Second {
						end = now - time.Second // held until the stall ends
						lat = end - a
					}
					c.Observe("svc", Sample{At: end, Latency: lat, Source: Reported}, false)
				}
			}
			add(now-10*time.Second, now-2*time.Second, tc.before)
			add(now-2*time.Second, now-10*ms, tc.short)
			f, _ := c.swing(c.service("svc"), now)
			if !tc.want(f) {
				t.Errorf("swing %.2f", f)
			}
		})
	}
}

// TestControllerNoFalseRise: under a steady Poisson load close to the
// target, a burst now and then passes for a rise (the spans slide at every
// tick), but it is undone a Window later as one that did not last: over
// ten seeds of two minutes the offline jobs spend at most 6 % of the time
// restrained (45 % when rises were counted by ends and never undone), and
// every pre-emption is undone within 6 s.
func TestControllerNoFalseRise(t *testing.T) {
	var off, all time.Duration
	for seed := uint64(1); seed <= 10; seed++ {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=100ms"))
		tr := run(t, c, 100*ms, []phase{{120 * time.Second, 8, constant(80 * ms)}}, seed)
		for r, d := range tr.onRung[0] {
			all += d
			if r > 0 {
				off += d
			}
		}
		for i, d := range tr.decisions {
			t.Logf("seed %d: %v %s", seed, d.At, d.Reason)
			if d.To > d.From && (i+1 >= len(tr.decisions) || tr.decisions[i+1].At-d.At > 6*time.Second) && d.At < 114*time.Second {
				t.Errorf("seed %d: %s, not undone within 6 s", seed, d.Reason)
			}
		}
	}
	if float64(off) > 0.06*float64(all) {
		t.Errorf("restrained %v of %v at a steady load", off, all)
	}
}

// TestControllerFallUndoesTheRises: two rises of load, each pre-empted,
// and a fall back to the first load return at once to the rung held
// before them, in one step. The calm is longer than the phases: with the
// default (5 s) a pre-empted rung that the service is within on is
// stepped down from as a trial before the next rise
// (TestControllerStartStepsDownOnCalm).
func TestControllerFallUndoesTheRises(t *testing.T) {
	c, _ := New(Config{Start: -1, Calm: 15 * time.Second})
	c.AddService("svc", MustParse("p99=100ms"))
	tr := run(t, c, 100*ms, []phase{{30 * time.Second, 8, constant(80 * ms)}, {10 * time.Second, 16, constant(80 * ms)},
		{10 * time.Second, 32, constant(80 * ms)}, {20 * time.Second, 8, constant(80 * ms)}}, 1)
	for _, d := range tr.decisions {
		t.Logf("%v: %s", d.At, d.Reason)
	}
	pre, top := 0, 0
	for _, d := range tr.decisions {
		if strings.Contains(d.Reason, "pre-empt") {
			pre++
			top = max(top, d.To)
		}
	}
	if pre < 2 || top < 2 {
		t.Fatalf("%d pre-emptions up to rung %d, want two rises pre-empted", pre, top)
	}
	if tr.onRung[3][0] < 17*time.Second {
		t.Errorf("after the fall: %v on rung 0 (%v), want back at once", tr.onRung[3][0], tr.onRung[3])
	}
}

// TestControllerEvidenceOverTime: a service of 8 requests a second, 4 %
// of them late on the cheapest rung and none on the next. Within one 5 s
// window three late requests (the evidence a climb needs) come now and
// then only; over the minute since the rung changed they are sure. After
// a minute of learning, the next four minutes hold 99 % in each of five
// seeds; judged over one window alone (Evidence = Window, as before) the
// controller kept stepping back down and held 98.2-99.2 %.
func TestControllerEvidenceOverTime(t *testing.T) {
	lat := func(r int) []time.Duration {
		v := make([]time.Duration, 25)
		for i := range v {
			v[i] = 80 * ms
		}
		if r == 0 {
			v[0] = 150 * ms
		}
		return v
	}
	for seed := uint64(1); seed <= 5; seed++ {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=100ms"))
		tr := run(t, c, 100*ms, []phase{{60 * time.Second, 8, lat}, {240 * time.Second, 8, lat}}, seed)
		att := 1 - float64(tr.late[1])/float64(tr.n[1])
		t.Logf("seed %d: %d decisions, attainment %.4f after the first minute (%v on each rung)", seed, len(tr.decisions), att, tr.onRung[1])
		if att < 0.99 {
			t.Errorf("seed %d: attainment %.4f after the first minute (%v on each rung): %+v", seed, att, tr.onRung[1], tr.decisions)
		}
	}
}

// TestControllerOtherServicesFallKeepsARise: a pre-emption for one
// service's rise of load (x, 8 to 20 requests a second at 30 s) stays
// when another service's load falls (y, 20 to 4 at 40 s); only the fall
// of the risen service's own load undoes it (or calm: 20 s here, longer
// than the test, so that a step down on calm does not hide it).
func TestControllerOtherServicesFallKeepsARise(t *testing.T) {
	c, _ := New(Config{Start: -1, Calm: 20 * time.Second})
	c.AddService("x", MustParse("p99=100ms"))
	c.AddService("y", MustParse("p99=100ms"))
	rng := rand.New(rand.NewPCG(7, 1))
	rateOf := func(id string, at time.Duration) float64 {
		switch {
		case id == "x" && at >= 30*time.Second:
			return 20
		case id == "x":
			return 8
		case at >= 40*time.Second:
			return 4
		}
		return 20
	}
	next := map[string]time.Duration{"x": 0, "y": 0}
	var ds []Decision
	for now := time.Duration(0); now < 50*time.Second; now += 10 * time.Millisecond {
		for _, id := range []string{"x", "y"} {
			for next[id] <= now {
				c.Observe(id, Sample{At: next[id] + 80*ms, Latency: 80 * ms, Source: Reported}, false)
				next[id] += time.Duration(rng.ExpFloat64() / rateOf(id, next[id]) * float64(time.Second))
			}
		}
		if d, ok := c.Step(now); ok {
			ds = append(ds, d)
		}
		if now > 34*time.Second && c.Level() == 0 {
			t.Fatalf("at %v the rise of x's load is undone: %+v", now, ds)
		}
	}
	for _, d := range ds {
		t.Logf("%v %s", d.At, d.Reason)
	}
	if !slices.ContainsFunc(ds, func(d Decision) bool { return strings.Contains(d.Reason, "pre-empt: x's load rose") }) {
		t.Errorf("x's rise was not pre-empted: %+v", ds)
	}
}

// TestControllerStartsProtected: a service with a target that sends its
// first requests moves the instance to Config.Start (rung 1 by default),
// not if the ladder's rung there suspends or holds every launch, and not at all with a
// negative Start; once a hundred of its requests (what places a p99) are
// well within the target, the rung steps down.
func TestControllerStartsProtected(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		want    int // rung after the first requests
		relaxed bool
	}{
		{"default", Config{}, 1, true},
		{"start 2", Config{Start: 2}, 2, true},
		{"no start", Config{Start: -1}, 0, false},
		{"rung 1 suspends", Config{Ladder: Ladder{{}, {Suspend: true}}}, 0, false},
		{"rung 1 holds all", Config{Ladder: Ladder{{}, {HoldAll: true}, {Suspend: true}}}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.AddService("svc", MustParse("p99=100ms"))
			tr := run(t, c, 100*ms, []phase{{time.Second, 20, constant(10 * ms)}, {30 * time.Second, 20, constant(10 * ms)}}, 1)
			first := 0
			if len(tr.decisions) > 0 && tr.decisions[0].At <= time.Second {
				first = tr.decisions[0].To
				if !strings.Contains(tr.decisions[0].Reason, "start: svc has a target (p99=100ms)") {
					t.Errorf("first decision %+v", tr.decisions[0])
				}
			}
			if first != tc.want {
				t.Fatalf("rung %d after the first requests, want %d: %+v", first, tc.want, tr.decisions)
			}
			var relaxAt time.Duration
			for _, d := range tr.decisions {
				if d.To < d.From && relaxAt == 0 {
					relaxAt = d.At
				}
			}
			if tc.relaxed != (relaxAt > 0) || tc.relaxed && relaxAt < 5*time.Second {
				// 100 requests at 20/s take 5 s.
				t.Errorf("first step down at %v: %+v", relaxAt, tr.decisions)
			}
		})
	}
}

// TestControllerRemembersAMiss: priority leaves 6 % of the requests late
// at 10/s and none at 3/s; rung 1 holds. After the climb on those misses
// the controller does not step down onto priority while the load stays
// (Remember, 5 min; before, it tried every few calms and each try cost
// late requests), but does once the load falls well below the one
// priority missed at, and again at the same load once Remember passed.
func TestControllerRemembersAMiss(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=100ms"))
	tr := run(t, c, 100*ms, []phase{{4 * time.Minute, 10, lateBelow(1)}, {time.Minute, 3, lateBelow(0)}, {7 * time.Minute, 10, lateBelow(1)}}, 2)
	var climbs, downs []Decision
	for _, d := range tr.decisions {
		if d.To > d.From {
			climbs = append(climbs, d)
		} else {
			downs = append(downs, d)
		}
	}
	if len(climbs) == 0 || climbs[0].At > time.Minute {
		t.Fatalf("no climb in the first minute: %+v", tr.decisions)
	}
	var inFirst, inLow int
	for _, d := range downs {
		switch {
		case d.At < 4*time.Minute:
			inFirst++
		case d.At < 5*time.Minute:
			inLow++
		}
	}
	if inFirst != 0 || inLow == 0 {
		t.Errorf("%d step downs while the load stayed, %d after it fell: %+v", inFirst, inLow, tr.decisions)
	}
	if last := tr.decisions[len(tr.decisions)-1]; len(climbs) < 3 {
		t.Errorf("priority never tried again at 10/s after Remember (last decision %+v): %+v", last, tr.decisions)
	}
	if late := tr.late[0]; late > 12 {
		t.Errorf("%d late in the first 4 minutes (%d requests): the miss is not remembered", late, tr.n[0])
	}
}

// TestControllerFallReturnsToAHeldRung: rung 1 holds the target at 10
// and 20 requests/s, rung 3 is needed at 40/s. When the load falls back to 10/s
// the controller returns to rung 1 at once, the rung that held at that
// load a minute before, rather than a rung per calm spell (one rung per
// 5 s before).
func TestControllerFallReturnsToAHeldRung(t *testing.T) {
	lat := lateBelow
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=100ms"))
	// The load rises in two steps of 1.4x; what a pre-emption of them
	// climbed is undone as they lapse, and the climb on the misses at 28/s
	// and 40/s stays: the fall has no rise to undo.
	tr := run(t, c, 100*ms, []phase{{40 * time.Second, 10, lat(1)}, {20 * time.Second, 20, lat(1)}, {10 * time.Second, 28, lat(3)}, {30 * time.Second, 40, lat(3)}, {30 * time.Second, 10, lat(1)}}, 3)
	if on := tr.onRung[3]; on[3]+on[4] < 10*time.Second {
		t.Fatalf("the high phase never reached rung 3: %v, %+v", on, tr.decisions)
	}
	on := tr.onRung[4]
	if above := on[2] + on[3] + on[4]; above > 6*time.Second || on[1] < 20*time.Second {
		t.Errorf("after the fall: %v on rungs 0-4 (want rung 1 within a few seconds): %+v", on, tr.decisions)
	}
	var jumped bool
	for _, d := range tr.decisions {
		if d.At >= 100*time.Second && d.To == 1 && strings.Contains(d.Reason, "held every target at") {
			jumped = true
		}
	}
	if !jumped {
		t.Errorf("no return to the rung that held after the fall: %+v", tr.decisions)
	}
}

// TestControllerQueueDrains: a service whose queue builds on rung 0
// (each request 150 ms of work at 10/s) and drains on rung 1 (50 ms). The
// requests that queued before the climb, and those behind them, are late
// after it too; judged against rung 1 they would take the controller to
// the top. Requests that arrived before the change, plus twice the
// longest latency just before it, are not judged: it stays below the top.
func TestControllerQueueDrains(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=1s"))
	top, ds := queued(c, 9, 10, 60*time.Second, rungWork(1, 0, 50*ms, 150*ms))
	if top < 1 || top >= len(c.Config().Ladder)-1 {
		t.Errorf("highest rung %d, want 1 to %d: %+v", top, len(c.Config().Ladder)-2, ds)
	}
}

// queued drives the controller with one service "svc" served one request
// at a time, Poisson arrivals at rate a second (seed), each request
// taking work(the rungs in force so far, every 10 ms) of the server's
// time, for dur: the highest rung reached and the decisions.
func queued(c *Controller, seed uint64, rate float64, dur time.Duration, work func(levels []int) time.Duration) (int, []Decision) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var free, next time.Duration // the server is free at free
	var pending []req
	var levels []int
	top := 0
	var ds []Decision
	for now := time.Duration(0); now < dur; now += 10 * time.Millisecond {
		levels = append(levels, c.Level())
		for next <= now {
			start := max(free, next)
			free = start + work(levels)
			pending = append(pending, req{free, free - next})
			next += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		}
		pending = deliver(c, pending, now, Hook)
		if d, ok := c.Step(now); ok {
			ds = append(ds, d)
		}
		top = max(top, c.Level())
	}
	return top, ds
}

// rungWork is a request's work for queued: fast where the rung in force
// lag ticks (10 ms each) ago was rung or above, else slow.
func rungWork(rung, lag int, fast, slow time.Duration) func([]int) time.Duration {
	return func(levels []int) time.Duration {
		if i := len(levels) - 1 - lag; i >= 0 && levels[i] >= rung {
			return fast
		}
		return slow
	}
}

// TestControllerBacklogNotJudged: a rung takes effect a second late (the
// offline job's kernels already queued run on), so a service overloaded
// on priority (14 ms of work a request at 80/s) keeps queueing for a
// second after the climb to the first rung (8 ms), and its backlog drains
// two seconds later. Those requests queued behind ones from before the
// change, whatever the rung; judged against it they took the controller
// to the top in a few ticks (as on an H100, round 36). Judged only from
// when the requests that came before the change had ended, it stays on
// the first rung or the one above (those after them still wait on the
// backlog for a while: one rung).
func TestControllerBacklogNotJudged(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=75ms"))
	top, ds := queued(c, 3, 80, 20*time.Second, rungWork(1, 100, 8*ms, 14*ms))
	if top < 1 || top > 2 {
		t.Errorf("highest rung %d, want 1 or 2: %+v", top, ds)
	}
}

// TestControllerClimbsAnOverload: a service overloaded on the first
// three rungs (14 ms of work a request at 80/s; 8 ms from rung 3) never
// drains on them; its requests are judged from when those that came
// before each change ended, so the controller reaches rung 3 within a few
// seconds (a rule that waited for the service to be idle held each rung a
// Window, and took 18-22 s).
func TestControllerClimbsAnOverload(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=75ms"))
	_, ds := queued(c, 5, 80, 20*time.Second, rungWork(3, 0, 8*ms, 14*ms))
	at := time.Duration(-1)
	for _, d := range ds {
		if d.To >= 3 {
			at = d.At
			break
		}
	}
	if at < 0 || at > 8*time.Second {
		t.Errorf("rung 3 reached at %v, want within 8 s: %+v", at, ds)
	}
}

// TestControllerHeldNeedsItsRequests: a rung is remembered as holding a
// load (for a fall of load to return to) only when the requests since it
// came in force place the percentile and keep the budget. Priority with
// 2.5 % late at 10/s is within its target for a while (three late of 120
// is no evidence yet at Alpha), but it did not hold: on the H100
// (round 6) such a record sent the controller back to priority after a
// fall, into misses.
func TestControllerHeldNeedsItsRequests(t *testing.T) {
	n := 0
	lat := func(int) []time.Duration { // every 40th late: 2.5 %
		n++
		if n%40 == 0 {
			return []time.Duration{200 * ms}
		}
		return []time.Duration{10 * ms}
	}
	cases := []struct {
		name string
		lat  func(int) []time.Duration
		held bool
	}{
		{"2.5 % late", lat, false},
		{"none late", constant(10 * ms), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := New(Config{Start: -1})
			c.AddService("svc", MustParse("p99=100ms"))
			tr := run(t, c, 100*ms, []phase{{12 * time.Second, 10, tc.lat}}, 5)
			if len(tr.decisions) > 0 {
				t.Skipf("the rung moved (%+v): no judgement of what priority held", tr.decisions)
			}
			if c.held[0].set != tc.held {
				t.Errorf("priority remembered as holding: %v, want %v (%d of %d late)", c.held[0].set, tc.held, tr.late[0], tr.n[0])
			}
		})
	}
}

// TestControllerForgets: what the rungs held and missed is forgotten when
// a service comes or goes (and by Forget, which mmk's kernel scheduler
// calls when an offline job comes or goes): it was measured beside the
// jobs of then. Before, a rung that missed beside a heavy trainer stayed
// refused for Remember after the trainer left.
func TestControllerForgets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Controller)
	}{
		{"a service comes", func(c *Controller) { c.AddService("other", MustParse("p99=1s")) }},
		{"a service goes", func(c *Controller) { c.RemoveService("svc") }},
		{"an offline job comes or goes", func(c *Controller) { c.Forget() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := New(Config{Start: -1})
			c.AddService("svc", MustParse("p99=100ms"))
			run(t, c, 100*ms, []phase{{time.Minute, 10, lateBelow(1)}}, 2)
			if !c.fails[0].set {
				t.Fatal("priority missed and is not remembered")
			}
			tc.change(c)
			if c.fails[0].set || slices.ContainsFunc(c.held, func(f failMark) bool { return f.set }) {
				t.Errorf("remembered after the change: fails %+v, held %+v", c.fails, c.held)
			}
		})
	}
}

// TestControllerProbeCountsOnlyRequestsAfterIt: a probe measures a
// service alone only by requests that arrived after its restraint
// settled; one that queued before it and ends during it is not alone
// (before, any request ending past the settle time counted, and a queue
// draining in the probe loosened a ratio target's bound).
func TestControllerProbeCountsOnlyRequestsAfterIt(t *testing.T) {
	c, _ := New(Config{Start: -1, MinAlone: 5})
	c.AddService("svc", MustParse("p99=2x"))
	now := time.Duration(0)
	for ; now < 2500*ms; now += 100 * ms {
		c.Observe("svc", Sample{At: now, Latency: 10 * ms}, false)
	}
	c.Step(now)
	if !c.Probing() {
		t.Fatalf("no probe after 25 requests with a ratio target and no latency alone")
	}
	start := now
	// Queued 2 s before the probe, ends 1 s into it.
	c.Observe("svc", Sample{At: start + time.Second, Latency: 3 * time.Second}, false)
	for now = start + 600*ms; now < start+2*time.Second; now += 100 * ms {
		c.Observe("svc", Sample{At: now, Latency: 10 * ms}, false)
	}
	st := c.Status(now)[0]
	if st.AloneN == 0 || st.Alone > 100*ms {
		t.Errorf("alone p99 %v over %d requests, want 10ms: a request that queued before the probe counted", st.Alone, st.AloneN)
	}
}

// mix is a latency distribution per rung: below rung need, of every 100
// requests near are at 0.8 of a 25 ms bound and late past it; from need
// on, all take 8 ms.
func mix(need, near, late int) func(int) []time.Duration {
	return func(r int) []time.Duration {
		if r >= need {
			return []time.Duration{8 * ms}
		}
		d := make([]time.Duration, 100)
		for i := range d {
			switch {
			case i < late:
				d[i] = 40 * ms
			case i < late+near:
				d[i] = 20 * ms
			default:
				d[i] = 8 * ms
			}
		}
		return d
	}
}

// TestControllerPreemptsARiseFromRoom: a service well within its target
// at 8 requests a second (every one 8 ms against 25 ms) whose load
// triples, and on priority a fifth of its requests come near the bound
// and 4 % past it. The Window's requests are mostly of the low load: the
// service is still well within by them when the rise shows. Its first
// requests at the new load are near the bound: the rise is pre-empted
// before the misses that would prove it (before, the climb waited for
// them: in the GPU's round 10, five late of 128 at priority at the high
// phase's start, against a budget of five for the phase). Its step down
// later is a trial that ends on the misses.
func TestControllerPreemptsARiseFromRoom(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=25ms"))
		tr := run(t, c, 25*ms, []phase{{30 * time.Second, 8, constant(8 * ms)}, {20 * time.Second, 24, mix(1, 20, 4)}}, seed)
		var first Decision
		for _, d := range tr.decisions {
			if d.At >= 30*time.Second && d.To > d.From {
				first = d
				break
			}
		}
		if !strings.Contains(first.Reason, "pre-empt") || first.At > 33*time.Second {
			t.Errorf("seed %d: first climb after the rise at 30s: %+v (want a pre-emption within 3 s)", seed, first)
		}
		if c.Level() == 0 {
			t.Errorf("seed %d: on priority at the end of the high load: %+v", seed, tr.decisions)
		}
	}
}

// TestControllerTrialEndsOnFewMisses: a step down onto a rung that has not
// held this load is a trial, and its misses need only TrialAlpha's
// evidence (three late of 100 at a 1 % budget, not five). The service at
// 20 requests a second is 5 % late on priority and on time on rung 1,
// where the start put it; the controller steps down once and comes back
// on the misses. Over 21 seeds the median trial is shorter than with the
// Alpha of a held rung (TrialAlpha = Alpha, the controller before).
func TestControllerTrialEndsOnFewMisses(t *testing.T) {
	trial := func(trialAlpha float64) time.Duration {
		var ds []time.Duration
		for seed := uint64(1); seed <= 21; seed++ {
			c, _ := New(Config{TrialAlpha: trialAlpha})
			c.AddService("svc", MustParse("p99=25ms"))
			tr := run(t, c, 25*ms, []phase{{40 * time.Second, 20, mix(1, 0, 5)}}, seed)
			var down, up time.Duration
			for _, d := range tr.decisions {
				switch {
				case d.To == 0 && down == 0:
					down = d.At
				case d.To == 1 && down > 0 && up == 0:
					up = d.At
					if !strings.Contains(d.Reason, "tighten") {
						t.Errorf("seed %d: back to rung 1 by %q", seed, d.Reason)
					}
				}
			}
			if down == 0 || up == 0 {
				t.Fatalf("seed %d: no trial of priority and return: %+v", seed, tr.decisions)
			}
			ds = append(ds, up-down)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	now, before := trial(0), trial(DefaultConfig().Alpha)
	if now >= before || now > 5*time.Second {
		t.Errorf("median trial of priority %v, %v with the Alpha of a held rung (want shorter, at most 5 s)", now, before)
	}
	t.Logf("median trial of priority %v, %v with the Alpha of a held rung", now, before)
}

// TestControllerStartStepsDownOnCalm: the start rung and a pre-emption's
// are no climb on misses, and a rung climbed for a load twice today's
// neither: a calm
// spell within the target steps down, without the four that a rung
// climbed on misses waits while the service is merely within (not well
// within) it. A service at 8 requests a second, every request at 0.8 of
// its bound on rung 1 and below it (within, never well within), leaves
// the start rung within 7 s, not 20.
func TestControllerStartStepsDownOnCalm(t *testing.T) {
	c, _ := New(Config{})
	c.AddService("svc", MustParse("p99=25ms"))
	tr := run(t, c, 25*ms, []phase{{30 * time.Second, 8, constant(20 * ms)}}, 1)
	if len(tr.decisions) < 2 || !strings.Contains(tr.decisions[0].Reason, "start") || tr.decisions[1].To != 0 || tr.decisions[1].At > 7*time.Second {
		t.Errorf("want the start rung, then rung 0 within 7 s: %+v", tr.decisions)
	}
	// A pre-emption's rung likewise: the load rises 1.9x, the service is
	// as close to its bound on every rung (18 ms of 25: priority's
	// predicted 24.7 ms at the new load, within it), and the rung is left
	// within 7 s.
	c, _ = New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=25ms"))
	tr = run(t, c, 25*ms, []phase{{30 * time.Second, 8, constant(18 * ms)}, {30 * time.Second, 13, constant(18 * ms)}}, 1)
	i := slices.IndexFunc(tr.decisions, func(d Decision) bool { return strings.Contains(d.Reason, "pre-empt") && d.At >= 30*time.Second })
	if i < 0 || i+1 >= len(tr.decisions) || tr.decisions[i+1].To >= tr.decisions[i].To || tr.decisions[i+1].At-tr.decisions[i].At > 7*time.Second {
		t.Errorf("want the rise pre-empted, then a step down within 7 s: %+v", tr.decisions)
	}
}

// TestConfigRanges: a probability outside (0, 1) is refused, naming the
// field and the value.
func TestConfigRanges(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Alpha: 1.5}, "alpha 1.5"},
		{Config{TrialAlpha: 1}, "trial alpha 1"},
		{Config{TrialAlpha: -0.1}, "trial alpha -0.1"},
		{Config{SwingAlpha: 2}, "swing alpha 2"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

// TestControllerPredictsTheRise: on priority the service runs at 20 ms of
// a 25 ms bound at 8 requests a second (close to it, within it); at 24 a
// second 5 % of its requests there take 40 ms, and every rung above holds
// it at 10 ms. The rise is pre-empted; priority, seen at 20 ms at a third
// of the load, is predicted at 35 ms now (RiseExponent) and not stepped
// back onto while the load stays up, and the phase keeps 99 % in time in
// each of five seeds. Before the prediction the pre-empted rung stepped
// down after one calm spell as a trial, and its late requests cost the
// high phase 99 % in some seeds.
func TestControllerPredictsTheRise(t *testing.T) {
	high, low := onPriority(oneIn20Late(15*ms), 10*ms), onPriority(constant(20*ms), 10*ms)
	for seed := uint64(1); seed <= 5; seed++ {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=25ms"))
		tr := run(t, c, 25*ms, []phase{{30 * time.Second, 8, low}, {30 * time.Second, 24, high}}, seed)
		for _, d := range tr.decisions {
			if d.At > 30*time.Second && d.To == 0 {
				t.Errorf("seed %d: back on priority at %v while the load is up: %s", seed, d.At, d.Reason)
			}
		}
		if att := 1 - float64(tr.late[1])/float64(tr.n[1]); att < 0.99 {
			t.Errorf("seed %d: %.3f in time at the high load (%d late of %d): %+v", seed, att, tr.late[1], tr.n[1], tr.decisions)
		}
		if st := c.Status(60 * time.Second); !strings.Contains(st[0].Detail, "no step down: svc predicted at p99") {
			t.Errorf("seed %d: the status does not say why the rung stays: %q", seed, st[0].Detail)
		}
	}
}

// TestControllerReturnsToAHeldRung: a service starts at 16 requests a
// second and priority holds it there (12 ms of a 25 ms bound); then
// priority misses (one request in 20 at 40 ms), and the controller climbs
// to rung 1, where the service is within its target but not well within
// (19 ms). When the load falls back, priority, which held there, is
// returned to within a calm spell or two:
//   - missed at 16, back at 6: priority is taken to hold a factor 1.6
//     below the miss, where it held before (within 7 s). Before, the miss
//     wiped what it had held, and rung 1 waited four calm spells (one seed
//     of five came back after 17 s);
//   - missed at 32, back at 16: the step down onto a rung that held at this
//     load lately waits one calm spell, not four (within 12 s; before, one
//     seed of five waited longer).
func TestControllerReturnsToAHeldRung(t *testing.T) {
	at := func(prio func(int) []time.Duration) func(int) []time.Duration { return onPriority(prio, 19*ms) }
	for _, tc := range []struct {
		name           string
		missAt, backAt float64
		typical        time.Duration
		within         time.Duration
	}{
		{"missed where it held", 16, 6, 15 * ms, 7 * time.Second},
		{"missed at twice the load", 32, 16, 12 * ms, 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				c, _ := New(Config{})
				c.AddService("svc", MustParse("p99=25ms"))
				tr := run(t, c, 25*ms, []phase{{30 * time.Second, 16, at(constant(12 * ms))}, {30 * time.Second, tc.missAt, at(oneIn20Late(tc.typical))},
					{30 * time.Second, tc.backAt, at(constant(12 * ms))}}, seed)
				for _, d := range tr.decisions {
					t.Logf("seed %d: %v %s", seed, d.At, d.Reason)
				}
				if slices.IndexFunc(tr.decisions, func(d Decision) bool { return strings.Contains(d.Reason, "tighten") && d.At >= 30*time.Second }) < 0 {
					t.Fatalf("seed %d: no tightening when priority missed", seed)
				}
				back := slices.IndexFunc(tr.decisions, func(d Decision) bool { return d.At >= 60*time.Second && d.To == 0 })
				if back < 0 || tr.decisions[back].At > 60*time.Second+tc.within {
					t.Errorf("seed %d: not back on priority within %v of the fall", seed, tc.within)
				}
			}
		})
	}
}

// TestControllerPredictionForgotten: what a rung showed is forgotten with
// the rest of the controller's memory (Forget, as when an offline job
// comes or goes, and Reset), and a service that no rung holds (it misses
// alone) predicts nothing.
func TestControllerPredictionForgotten(t *testing.T) {
	high := onPriority(constant(40*ms), 10*ms)
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=25ms"))
	run(t, c, 25*ms, []phase{{30 * time.Second, 8, constant(20 * ms)}, {30 * time.Second, 24, high}}, 1)
	now := 60 * time.Second
	if sv, _, _ := c.predictsMiss(0, now, false, RiseExponent); sv == nil {
		t.Fatal("priority, seen at 20 ms at 8 requests a second, is not predicted to miss at 24")
	}
	c.service("svc").state = Unattainable
	if sv, why, _ := c.predictsMiss(0, now, false, RiseExponent); sv != nil {
		t.Errorf("a service that misses alone predicts a miss: %s", why)
	}
	c.service("svc").state = Met
	c.Forget()
	if sv, why, _ := c.predictsMiss(0, now, false, RiseExponent); sv != nil {
		t.Errorf("after Forget: %s", why)
	}
}

// TestControllerFallChecksThePrediction: priority runs a service at 23
// ms of a 25 ms bound at 8 requests a second; the load rises to 40
// (pre-empted, every rung above priority at 10 ms) and falls to 15, where
// priority leaves 5 % late. The fall undoes the rise, but not onto
// priority, seen close to its bound at about half this load (predicted
// at 32 ms). Before, the fall returned to priority at once in three seeds
// of five.
func TestControllerFallChecksThePrediction(t *testing.T) {
	at := func(prio func(int) []time.Duration) func(int) []time.Duration { return onPriority(prio, 10*ms) }
	missing := oneIn20Late(15 * ms)
	for seed := uint64(1); seed <= 5; seed++ {
		c, _ := New(Config{Start: -1})
		c.AddService("svc", MustParse("p99=25ms"))
		tr := run(t, c, 25*ms, []phase{{30 * time.Second, 8, at(constant(23 * ms))}, {20 * time.Second, 40, at(missing)},
			{30 * time.Second, 15, at(missing)}}, seed)
		for _, d := range tr.decisions {
			t.Logf("seed %d: %v %s", seed, d.At, d.Reason)
			if d.At >= 50*time.Second && d.To == 0 && strings.Contains(d.Reason, "fell") {
				t.Errorf("seed %d: the fall returned to priority: %s", seed, d.Reason)
			}
		}
	}
}

// TestControllerFutileOnceSeen: a service late on every rung alike (a
// machine that stalls on its own) makes the controller climb to the top
// once and find it futile; when it is judged again (FutileFor later, at
// the same load) the top rung was seen no better at this load, and the
// controller does not climb again. Before, it climbed to the top once a
// minute, restraining the offline jobs for nothing.
func TestControllerFutileOnceSeen(t *testing.T) {
	c, _ := New(Config{Start: -1})
	c.AddService("svc", MustParse("p99=10ms"))
	tr := run(t, c, 10*ms, []phase{{150 * time.Second, 50, constant(20 * ms)}}, 1)
	climbs := 0
	for _, d := range tr.decisions {
		if d.From == 0 && d.To > 0 {
			climbs++
		}
	}
	if climbs != 1 {
		t.Errorf("%d climbs from priority, want 1: %+v", climbs, tr.decisions)
	}
	if on := tr.onRung[0][0]; on < 140*time.Second {
		t.Errorf("%v of 150 s on priority, want all but the first climb", on)
	}
	if st := c.Status(150 * time.Second)[0]; !strings.Contains(st.Detail, "at suspend") || !strings.Contains(st.Detail, "ago at") {
		t.Errorf("status %s: %s", st.State, st.Detail)
	}
}

// TestControllerGiveUpKeepsAnotherClimb: giving up on a service that no
// restraint helps returns to where its own climb began; another service's
// climb stays where it is.
func TestControllerGiveUpKeepsAnotherClimb(t *testing.T) {
	c, _ := New(Config{})
	c.AddService("a", MustParse("p99=25ms"))
	c.AddService("b", MustParse("p99=25ms"))
	c.level, c.climb = 2, &climb{id: "a", from: 0}
	if d, moved := c.giveUp(time.Minute, c.service("b"), "b's misses are its own"); moved || c.Level() != 2 || c.climb == nil || c.climb.id != "a" {
		t.Errorf("giving up on b moved to %d (%+v), climb %+v; want a's climb kept at rung 2", c.Level(), d, c.climb)
	}
	if st := c.service("b"); st.state != NotHeld || st.futileUntil <= time.Minute {
		t.Errorf("b: state %s, futile until %v", st.state, st.futileUntil)
	}
	if d, moved := c.giveUp(time.Minute, c.service("a"), "a's misses are its own"); !moved || d.To != 0 || c.climb != nil {
		t.Errorf("giving up on a: %+v, moved %v, climb %+v; want back to rung 0", d, moved, c.climb)
	}
}

// TestControllerPassesAlikeRungs: beside one trainer that can mask,
// "tpcs=0.75@1" is "tpcs=0.75": a climb from it goes on to 1/2 of the
// TPCs at once, and a step down from 1/2 goes back to it, never stopping
// on the rung where nothing would change; beside two (nothing alike) the
// climb takes every rung. The rung a service needs here is 1/2 (rung 3).
func TestControllerPassesAlikeRungs(t *testing.T) {
	ladder, err := ParseLadder([]string{"priority", "tpcs=0.75@1", "tpcs=0.75", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	path := func(ds []Decision) [][2]int {
		var p [][2]int
		for _, d := range ds {
			p = append(p, [2]int{d.From, d.To})
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		maskable   int
		climb      [][2]int
		fromShared [][2]int
	}{
		{"one trainer", 1, [][2]int{{0, 1}, {1, 3}}, [][2]int{{2, 0}}},
		{"two trainers", 2, [][2]int{{0, 1}, {1, 2}, {2, 3}}, [][2]int{{2, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Ladder: ladder, Start: -1})
			if err != nil {
				t.Fatal(err)
			}
			c.SetAlike(ladder.Alike(tc.maskable))
			c.AddService("svc", MustParse("p99=100ms"))
			tr := run(t, c, 100*ms, []phase{{12 * time.Second, 50, lateBelow(3)}}, 1)
			if got := path(tr.decisions); !slices.Equal(got, tc.climb) {
				t.Errorf("climb %v, want %v: %+v", got, tc.climb, tr.decisions)
			}
			// Every request within its target from now on: the steps down
			// pass over the same rungs.
			c2, _ := New(Config{Ladder: ladder, Start: -1})
			c2.SetAlike(ladder.Alike(tc.maskable))
			c2.AddService("svc", MustParse("p99=10ms"))
			c2.level = 3
			tr = run(t, c2, 10*ms, []phase{{30 * time.Second, 50, constant(2 * ms)}}, 1)
			var down [][2]int
			for _, s := range tc.climb {
				down = append([][2]int{{s[1], s[0]}}, down...)
			}
			if got := path(tr.decisions); !slices.Equal(got, down) {
				t.Errorf("steps down %v, want %v: %+v", got, down, tr.decisions)
			}
			// From the shared mask (rung 2) too: beside one trainer it is
			// rung 1, so the step down goes to priority.
			c3, _ := New(Config{Ladder: ladder, Start: -1})
			c3.SetAlike(ladder.Alike(tc.maskable))
			c3.AddService("svc", MustParse("p99=10ms"))
			c3.level = 2
			tr = run(t, c3, 10*ms, []phase{{6 * time.Second, 50, constant(2 * ms)}}, 1)
			if got, want := path(tr.decisions), tc.fromShared; !slices.Equal(got, want) {
				t.Errorf("steps down from rung 2 %v, want %v", got, want)
			}
		})
	}
}

// TestControllerNoRiseAtResume: a service close to its bound (8 ms of 10)
// at a steady 20 requests a second, idle 4 s, then back at the same rate.
// Where the controller was Reset while it was idle (mmk switched on, as
// the SLO benchmark does between settings), the idle time before the
// service began is no load that rose: no pre-emption. Without the Reset
// the resume is a rise from nothing, and is pre-empted.
func TestControllerNoRiseAtResume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reset   bool
		preempt bool
	}{
		{"reset while idle", true, false},
		{"idle, no reset", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := New(Config{Start: -1})
			c.AddService("svc", MustParse("p99=10ms"))
			rng := rand.New(rand.NewPCG(3, 1))
			var pending []req
			var ds []Decision
			next := time.Duration(0)
			for now := time.Duration(0); now < 24*time.Second; now += 10 * time.Millisecond {
				if now == 10*time.Second && tc.reset {
					c.Reset(now)
				}
				idle := now >= 10*time.Second && now < 14*time.Second
				for ; next <= now; next += time.Duration(rng.ExpFloat64() / 20 * float64(time.Second)) {
					if !idle {
						pending = append(pending, req{next + 8*ms, 8 * ms})
					}
				}
				pending = deliver(c, pending, now, Hook)
				if d, ok := c.Step(now); ok {
					ds = append(ds, d)
				}
			}
			var pre []Decision
			for _, d := range ds {
				if strings.Contains(d.Reason, "pre-empt") {
					pre = append(pre, d)
				}
			}
			if got := len(pre) > 0; got != tc.preempt {
				t.Errorf("pre-empted %v, want %v: %+v", got, tc.preempt, ds)
			}
		})
	}
}

// TestControllerPreemptsPastAPredictedMiss: a service at 8 requests a
// second takes 20 ms of its 25 ms bound on priority, 18 ms on rung 1 (the
// start rung, where it was seen) and 8 ms above. When its load rises
// tenfold, the pre-emption comes within a second, on the requests of
// the last 2 s (some 26 a second, half of them still of the low load):
// rung 1 is predicted past the bound there (18 ms x (26/7.3)^0.32), and
// the pre-emption passes over it to rung 2, saying why. A rise to twice
// the load (rung 1 predicted at 22 ms) pre-empts to rung 1 only.
func TestControllerPreemptsPastAPredictedMiss(t *testing.T) {
	masks, err := ParseLadder([]string{"priority", "tpcs=0.75@1", "tpcs=0.75", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	lat := func(r int) []time.Duration {
		return []time.Duration{[]time.Duration{20 * ms, 18 * ms, 8 * ms}[min(r, 2)]}
	}
	for _, tc := range []struct {
		name   string
		ladder Ladder
		alike  []bool
		rate   float64
		to     int
		past   string
	}{
		{"tenfold", DefaultLadder(), nil, 80, 2, "past guard=256µs: svc predicted at p99"},
		{"twice", DefaultLadder(), nil, 16, 1, ""},
		// Beside one trainer tpcs=0.75@1 is tpcs=0.75: the pre-emption
		// passes over both.
		{"tenfold, masks, one trainer", masks, masks.Alike(1), 80, 3, "past tpcs=0.75@1: svc predicted at p99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := New(Config{Ladder: tc.ladder})
			c.SetAlike(tc.alike)
			c.AddService("svc", MustParse("p99=25ms"))
			tr := run(t, c, 25*ms, []phase{{30 * time.Second, 8, lat}, {5 * time.Second, tc.rate, lat}}, 1)
			i := slices.IndexFunc(tr.decisions, func(d Decision) bool { return d.At >= 30*time.Second && d.To > d.From })
			if i < 0 {
				t.Fatalf("no climb after the rise: %+v", tr.decisions)
			}
			d := tr.decisions[i]
			if !strings.Contains(d.Reason, "pre-empt") || d.From != 0 || d.To != tc.to ||
				tc.past != "" && !strings.Contains(d.Reason, tc.past) || tc.past == "" && strings.Contains(d.Reason, "past ") {
				t.Errorf("first climb after the rise: %d -> %d, %s", d.From, d.To, d.Reason)
			}
		})
	}
}

// TestControllerRiseUndoneWhereAlike: a rise (evenly spaced requests, 8
// then 30 a second) pre-empted from tpcs=0.75@1 to tpcs=0.75 beside two
// trainers; one trainer leaves, so the two rungs
// are alike; when the load falls back, the rise is over and nothing
// below tpcs=0.75@1 is stepped onto for it (before, the step down passed
// over the rung the rise began on, to priority).
func TestControllerRiseUndoneWhereAlike(t *testing.T) {
	ladder, err := ParseLadder([]string{"priority", "tpcs=0.75@1", "tpcs=0.75", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(Config{Ladder: ladder, Calm: time.Minute, MaxCalm: time.Minute})
	c.SetAlike(ladder.Alike(2))
	c.AddService("svc", MustParse("p99=25ms"))
	var pending []req
	var ds []Decision
	next := time.Duration(0)
	for now := time.Duration(0); now < 40*time.Second; now += 10 * time.Millisecond {
		if now == 25*time.Second {
			c.SetAlike(ladder.Alike(1))
		}
		rate := 8.0
		if now >= 15*time.Second && now < 30*time.Second {
			rate = 30
		}
		for ; next <= now; next += time.Duration(float64(time.Second) / rate) {
			pending = append(pending, req{next + 20*ms, 20 * ms})
		}
		pending = deliver(c, pending, now, Hook)
		if d, ok := c.Step(now); ok {
			ds = append(ds, d)
		}
	}
	for _, d := range ds {
		t.Logf("%v %d->%d %s", d.At, d.From, d.To, d.Reason)
	}
	pre := slices.IndexFunc(ds, func(d Decision) bool { return strings.Contains(d.Reason, "pre-empt") })
	if pre < 0 || ds[pre].From != 1 || ds[pre].To != 2 {
		t.Fatalf("no pre-emption from rung 1 to 2: %+v", ds)
	}
	for _, d := range ds[pre+1:] {
		if d.To < 1 {
			t.Errorf("stepped down past the rung the rise began on: %d -> %d, %s", d.From, d.To, d.Reason)
		}
	}
}

// TestControllerSteadyNearTarget: a service that meets its target at a
// steady load, 0.9 % of its requests late on every rung (no restraint
// helps it, and none is needed), is restrained little: over 20 seeds of
// two minutes at 30 and at 100 requests a second, at most 15 % of the
// time above rung 0 (8 % measured; a rule that judged a service more
// than 1 % late over the last minute on TrialAlpha's evidence kept it
// restrained 39-56 % of the time, and was dropped).
func TestControllerSteadyNearTarget(t *testing.T) {
	plant := func(int) []time.Duration { return lateIn(1000, 9, 8*ms, 40*ms) }
	for _, rate := range []float64{30, 100} {
		var on, all time.Duration
		for seed := uint64(1); seed <= 20; seed++ {
			c, _ := New(Config{Start: -1})
			c.AddService("svc", MustParse("p99=25ms"))
			tr := run(t, c, 25*ms, []phase{{2 * time.Minute, rate, plant}}, seed)
			for r, d := range tr.onRung[0] {
				all += d
				if r > 0 {
					on += d
				}
			}
		}
		if frac := float64(on) / float64(all); frac > 0.15 {
			t.Errorf("%g requests a second: restrained %.0f %% of the time", rate, 100*frac)
		} else {
			t.Logf("%g requests a second: restrained %.1f %% of the time", rate, 100*frac)
		}
	}
}

// TestControllerAim: a service 0.8 % late on rung 0 and 0.1 % on every
// rung above, beside a p99 target (a 1 % budget), at 60 requests a
// second for three minutes over 10 seeds. Aiming at the whole budget
// (Aim 1) the controller leaves it on rung 0 most of the time: it meets
// its target there. Aiming at half of it (Aim 0.5), the 0.8 % is a miss
// on evidence, and rung 1 is held most of the time.
func TestControllerAim(t *testing.T) {
	plant := func(rung int) []time.Duration {
		if rung == 0 {
			return lateIn(1000, 8, 8*ms, 40*ms)
		}
		return lateIn(1000, 1, 8*ms, 40*ms)
	}
	for _, tc := range []struct {
		aim            float64
		restrainedMore bool
	}{{1, false}, {0.5, true}} {
		var on, all time.Duration
		for seed := uint64(1); seed <= 10; seed++ {
			c, err := New(Config{Start: -1, Aim: tc.aim})
			if err != nil {
				t.Fatal(err)
			}
			c.AddService("svc", MustParse("p99=25ms"))
			tr := run(t, c, 25*ms, []phase{{3 * time.Minute, 60, plant}}, seed)
			for r, d := range tr.onRung[0] {
				all += d
				if r > 0 {
					on += d
				}
			}
		}
		frac := float64(on) / float64(all)
		t.Logf("aim %g: restrained %.0f %% of the time", tc.aim, 100*frac)
		if tc.restrainedMore != (frac > 0.5) {
			t.Errorf("aim %g: restrained %.0f %% of the time; want more than half: %v", tc.aim, 100*frac, tc.restrainedMore)
		}
	}
}

// TestConfigAimRange: an aim outside (0, 1] is refused by name; 0 takes
// the default.
func TestConfigAimRange(t *testing.T) {
	for _, aim := range []float64{-0.1, 1.01, math.NaN()} {
		if _, err := New(Config{Aim: aim}); err == nil || !strings.Contains(err.Error(), "aim") {
			t.Errorf("aim %v: error %v, want one naming the aim", aim, err)
		}
	}
	c, err := New(Config{})
	if err != nil || c.Config().Aim != DefaultConfig().Aim {
		t.Fatalf("aim 0: %v, aim %v; want the default %v", err, c.Config().Aim, DefaultConfig().Aim)
	}
	if err := c.SetAim(0.5); err != nil || c.Config().Aim != 0.5 {
		t.Errorf("SetAim(0.5): %v, aim %v", err, c.Config().Aim)
	}
	if err := c.SetAim(0); err == nil || c.Config().Aim != 0.5 {
		t.Errorf("SetAim(0): %v, aim %v; want an error and the aim kept", err, c.Config().Aim)
	}
}

// TestControllerMissesAlone: on a machine that stalls on its own (rounds
// 38 and 39 on an H100: a service alone 2-5 % past a 25 ms bound), a
// service's misses are not all the offline jobs' doing. Its requests
// while the offline jobs are suspended measure it alone; once they show
// it past its bound alone, the climb goes back to where it began, the
// service is said unattainable with its share late alone, and from
// there the offline jobs are held only to add no more than its budget
// to that share. Over 10 seeds of the benchmark's four 22 s phases:
//   - 5 % late on every rung: the trainer at 0.77 of its speed (by the
//     rungs' speeds below), not 0.58 (the climbs to suspend and back that
//     each phase's change of load set off before, each futile), as late
//     (4.6 %);
//   - 10 % late below rung 2, 3.5 % from it, 3 % suspended: the trainer
//     at 0.60, not 0.45, 9 % of the time on the top rung, not 14 %; 5.4 %
//     of the requests late, not 3.5 % (the share late alone is estimated
//     when its evidence first suffices, 4.1 % here, which errs high).
func TestControllerMissesAlone(t *testing.T) {
	lad := maskLadder(t)
	for _, tc := range []struct {
		name      string
		plant     func(int) []time.Duration
		minSpeed  float64
		maxOnTop  float64
		wantAlone string
	}{
		{"5 % late everywhere", func(int) []time.Duration { return lateIn(200, 10, 8*ms, 40*ms) }, 0.7, 0.1, "% late)"},
		{"10 % late, 3.5 % from rung 2", func(r int) []time.Duration {
			switch {
			case r == 5:
				return lateIn(200, 6, 8*ms, 40*ms)
			case r >= 2:
				return lateIn(200, 7, 8*ms, 40*ms)
			}
			return lateIn(200, 20, 8*ms, 40*ms)
		}, 0.55, 0.1, "% late: "},
	} {
		var on [6]time.Duration
		var n, late int
		var last ServiceStatus
		for seed := uint64(1); seed <= 10; seed++ {
			c, _ := New(Config{Ladder: lad})
			c.AddService("svc", MustParse("p99=25ms"))
			pl := tc.plant
			tr := run(t, c, 25*ms, []phase{{22 * time.Second, 15, pl}, {22 * time.Second, 30, pl}, {22 * time.Second, 50, pl}, {22 * time.Second, 15, pl}}, seed)
			for _, p := range tr.onRung {
				for r, d := range p {
					on[r] += d
				}
			}
			for i := range tr.n {
				n, late = n+tr.n[i], late+tr.late[i]
			}
			last = c.Status(88 * time.Second)[0]
		}
		speed, top := maskSpeed(on[:])
		t.Logf("%s: time on the rungs %v, %.1f %% late, trainer at %.2f, on top %.0f %% of the time; %s: %s", tc.name, on, 100*float64(late)/float64(n), speed, 100*top, last.State, last.Detail)
		if speed < tc.minSpeed || top > tc.maxOnTop {
			t.Errorf("%s: trainer at %.2f (want %.2f or more), on the top rung %.0f %% of the time (want at most %.0f %%)", tc.name, speed, tc.minSpeed, 100*top, 100*tc.maxOnTop)
		}
		if last.State != Unattainable || !strings.Contains(last.Detail, tc.wantAlone) {
			t.Errorf("%s: last status %s (%s), want unattainable with %q", tc.name, last.State, last.Detail, tc.wantAlone)
		}
	}
}

// TestControllerMissesAloneLong: over 20 minutes of the stalling plant
// (5 % late on every rung, 30 requests a second), the verdict that the
// target is out of reach alone outlives the requests it rests on: once
// they are older than Remember a probe (the top rung for a few seconds,
// ProbeEvery apart) measures the service alone again, instead of a climb
// to the top every Remember. The trainer runs at 0.78 of its speed by
// the rungs' speeds, 1.3 % of the time on the top rung.
func TestControllerMissesAloneLong(t *testing.T) {
	c, _ := New(Config{Ladder: maskLadder(t)})
	c.AddService("svc", MustParse("p99=25ms"))
	pl := func(int) []time.Duration { return lateIn(200, 10, 8*ms, 40*ms) }
	tr := run(t, c, 25*ms, []phase{{20 * time.Minute, 30, pl}}, 1)
	speed, top := maskSpeed(tr.onRung[0])
	probes := 0
	for _, d := range tr.decisions {
		if strings.Contains(d.Reason, "was past its target alone") {
			probes++
		}
	}
	t.Logf("trainer at %.2f, %.1f %% of the time on the top rung, %d probes, %d decisions", speed, 100*top, probes, len(tr.decisions))
	if speed < 0.7 || top > 0.03 || probes == 0 {
		t.Errorf("trainer at %.2f (want 0.7 or more), top rung %.1f %% of the time (want at most 3 %%), %d probes (want some)", speed, 100*top, probes)
	}
}

// TestControllerSuspensionSetsNoRatioBound: a ratio target's bound comes
// from probes: requests while a climb suspended the offline jobs (at
// whatever load called for it) do not move it.
func TestControllerSuspensionSetsNoRatioBound(t *testing.T) {
	lad, _ := ParseLadder([]string{"priority", "suspend"})
	c, _ := New(Config{Start: -1, Ladder: lad})
	c.AddService("svc", MustParse("p99=2x"))
	for i := range 60 {
		c.Observe("svc", Sample{At: time.Duration(i) * 10 * ms, Latency: 5 * ms}, true)
	}
	before := c.service("svc").tr.Bound()
	c.level, c.changedAt = 1, 10*time.Second
	for i := range 200 {
		c.Observe("svc", Sample{At: 11*time.Second + time.Duration(i)*10*ms, Latency: 30 * ms}, false)
	}
	if after := c.service("svc").tr.Bound(); before != 10*ms || after != before {
		t.Errorf("bound %v after the probe-like requests alone, %v after 200 requests while suspended; want 10ms both", before, after)
	}
}

// TestControllerFailedSuspensionIsNotAlone: requests while the rung
// suspends count as the service alone only while every offline job is
// stopped (SetSuspended): not while a suspension failed to stop one, and
// once it stopped them all, only those that arrive Settle after that.
// Before, a failed suspension's requests, the offline jobs running
// beside them, were taken for what the service does alone.
func TestControllerFailedSuspensionIsNotAlone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		apply     func(c *Controller)
		wantAlone int
	}{
		{"stopped them all", func(c *Controller) { c.SetSuspended(true, 10*time.Second) }, 200},
		{"one runs on", func(c *Controller) { c.SetSuspended(false, 10*time.Second) }, 0},
		{"all stopped at 12 s", func(c *Controller) {
			c.SetSuspended(false, 10*time.Second)
			c.SetSuspended(true, 12*time.Second)
		}, 49}, // those arriving after 12.5 s: the last 49 of 10.995-12.985 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			lad, _ := ParseLadder([]string{"priority", "suspend"})
			c, _ := New(Config{Start: -1, Ladder: lad})
			c.AddService("svc", MustParse("p99=25ms"))
			c.level, c.changedAt = 1, 10*time.Second
			tc.apply(c)
			for i := range 200 {
				c.Observe("svc", Sample{At: 11*time.Second + time.Duration(i)*10*ms, Latency: 5 * ms}, false)
			}
			if got := len(c.service("svc").alone); got != tc.wantAlone {
				t.Errorf("%d requests taken as alone, want %d", got, tc.wantAlone)
			}
		})
	}
}

// TestControllerUnattainableSaysItsAim: an unattainable service's
// detail says the late share the offline jobs are held to (its budget
// and its share late alone) and, below an aim of 1, the share the
// controller tightens past.
func TestControllerUnattainableSaysItsAim(t *testing.T) {
	for _, tc := range []struct {
		aim  float64
		want string
	}{
		{1, "held to 11.0 % late: "},
		{0.5, "held to 11.0 % late (aiming at 10.5 %): "},
	} {
		c, _ := New(Config{Start: -1, Ladder: maskLadder(t), Aim: tc.aim})
		c.AddService("svc", MustParse("p99=25ms"))
		for i := range 100 {
			lat := 8 * ms
			if i%10 == 0 {
				lat = 40 * ms
			}
			c.Observe("svc", Sample{At: time.Duration(i) * 50 * ms, Latency: lat}, true)
		}
		c.Step(5 * time.Second)
		if st := c.Status(5 * time.Second)[0]; st.State != Unattainable || !strings.Contains(st.Detail, tc.want) {
			t.Errorf("aim %g: %s (%s), want unattainable with %q", tc.aim, st.State, st.Detail, tc.want)
		}
	}
}

// maskLadder is the ladder of the H100 rounds 38-40: priority, a mask
// keeping 0.97, 3/4, 1/2 and 1/4 of the TPCs, suspend.
func maskLadder(t *testing.T) Ladder {
	t.Helper()
	l, err := ParseLadder([]string{"priority", "tpcs=0.97", "tpcs=0.75", "tpcs=0.5", "tpcs=0.25", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// maskSpeed weighs the time spent on each rung of maskLadder by a vgg19
// trainer's speed there (about as measured on an H100: 0.9 beside a
// service under priority, 0.8, 0.65, 0.5, 0.3, 0 suspended): the
// trainer's speed over the run, and the share of the time on the top
// rung.
func maskSpeed(on []time.Duration) (speed, top float64) {
	rung := []float64{0.9, 0.8, 0.65, 0.5, 0.3, 0}
	var w, all float64
	for r, d := range on {
		w, all = w+rung[r]*d.Seconds(), all+d.Seconds()
	}
	return w / all, on[len(on)-1].Seconds() / all
}
