package slo

import (
	"testing"
	"time"
)

const ms = time.Millisecond

// TestQuantile: nearest rank.
func TestQuantile(t *testing.T) {
	v := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {90, 9}, {99, 10}, {10, 1}, {1, 1}, {95, 10}}
	for _, tc := range tests {
		if got := Quantile(v, tc.p); got != tc.want {
			t.Errorf("p%g = %v, want %v", tc.p, got, tc.want)
		}
	}
	if Quantile(nil, 99) != 0 {
		t.Error("no values")
	}
}

// TestTrackerWindow: counts, late requests and percentiles of the
// requests that ended in a span.
func TestTrackerWindow(t *testing.T) {
	tr := NewTracker(MustParse("p90=10ms"), 10*ms)
	for i := range 100 {
		lat := 5 * ms
		if i%10 == 0 {
			lat = 20 * ms // 10 late
		}
		tr.Add(Sample{At: time.Duration(i) * 10 * ms, Latency: lat})
	}
	st := tr.Window(-1, time.Second)
	if st.N != 100 || st.Late != 10 || st.P50 != 5*ms || st.Pct != 5*ms || st.Max != 20*ms {
		t.Errorf("whole: %+v", st)
	}
	if a := st.Attainment(); a != 0.9 {
		t.Errorf("attainment %v", a)
	}
	st = tr.Window(495*ms, 990*ms) // requests 50..99
	if st.N != 50 || st.Late != 5 || st.Rate < 101 || st.Rate > 102 {
		t.Errorf("second half: %+v", st)
	}
	if n, late := tr.Total(); n != 100 || late != 10 {
		t.Errorf("total %d, %d late", n, late)
	}
	if (Stats{}).Attainment() != 1 {
		t.Error("no request is full attainment")
	}
}

// TestTrackerReportedReplacesHook: once a service reports its own
// latencies, the hook's are no longer judged.
func TestTrackerReportedReplacesHook(t *testing.T) {
	tr := NewTracker(MustParse("p99=10ms"), 10*ms)
	tr.Add(Sample{At: 1 * ms, Latency: 50 * ms, Source: Hook})
	tr.Add(Sample{At: 2 * ms, Latency: 3 * ms, Source: Reported})
	tr.Add(Sample{At: 3 * ms, Latency: 50 * ms, Source: Hook})
	st := tr.Window(-1, time.Second)
	if !tr.Reported() || st.N != 1 || st.Late != 0 || st.Max != 3*ms {
		t.Errorf("window %+v, reported %v", st, tr.Reported())
	}
}

// TestTrackerHistory: one point a second, empty ones across a gap, the
// open one last.
func TestTrackerHistory(t *testing.T) {
	tr := NewTracker(MustParse("p99=10ms"), 10*ms)
	add := func(at time.Duration, lat time.Duration) { tr.Add(Sample{At: at, Latency: lat}) }
	add(100*ms, 5*ms)
	add(900*ms, 15*ms)
	add(1500*ms, 5*ms)
	add(4200*ms, 5*ms) // seconds 2 and 3 are empty
	h := tr.History(4500 * ms)
	if len(h) != 5 {
		t.Fatalf("%d points: %+v", len(h), h)
	}
	want := []struct {
		start   time.Duration
		n, late int
	}{{0, 2, 1}, {time.Second, 1, 0}, {2 * time.Second, 0, 0}, {3 * time.Second, 0, 0}, {4 * time.Second, 1, 0}}
	for i, w := range want {
		if h[i].Start != w.start || h[i].N != w.n || h[i].Late != w.late || h[i].Bound != 10*ms {
			t.Errorf("point %d: %+v, want start %v n %d late %d", i, h[i], w.start, w.n, w.late)
		}
	}
	if h[0].Pct != 15*ms {
		t.Errorf("point 0 p99 %v", h[0].Pct)
	}
}

// TestTrackerKeepsTheLast: the ring keeps the newest Keep requests.
func TestTrackerKeepsTheLast(t *testing.T) {
	tr := NewTracker(MustParse("p99=10ms"), 10*ms)
	for i := range Keep + 10 {
		tr.Add(Sample{At: time.Duration(i+1) * time.Microsecond, Latency: time.Duration(i)})
	}
	st := tr.Window(0, time.Hour)
	if st.N != Keep || tr.Last() != time.Duration(Keep+10)*time.Microsecond {
		t.Errorf("kept %d, last %v", st.N, tr.Last())
	}
}

// TestTrackerDrained: when the requests kept that arrived by after had
// all ended, at most limit; final once a request kept arrived after it.
func TestTrackerDrained(t *testing.T) {
	// Requests as (arrival, end) in ms: a queue 0-100-250-300, idle,
	// then one at 400-450.
	reqs := [][2]int{{0, 100}, {90, 250}, {240, 300}, {400, 450}}
	for _, tc := range []struct {
		name         string
		after, limit int
		n            int // requests kept (the first n)
		want         int
		final        bool
	}{
		{"inside the queue: the end of those before", 50, 1000, 4, 100, true},
		{"later in it", 95, 1000, 4, 250, true},
		{"in an idle spell: at once", 320, 1000, 4, 320, true},
		{"capped", 50, 80, 4, 80, true},
		{"nothing that came later ended yet", 50, 1000, 1, 100, false},
		{"before every request", -10, 1000, 4, -10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(MustParse("p99=1s"), time.Second)
			for _, r := range reqs[:tc.n] {
				tr.Add(Sample{At: time.Duration(r[1]) * ms, Latency: time.Duration(r[1]-r[0]) * ms})
			}
			at, final := tr.Drained(time.Duration(tc.after)*ms, time.Duration(tc.limit)*ms)
			if at != time.Duration(tc.want)*ms || final != tc.final {
				t.Errorf("Drained = %v, %v; want %v, %v", at, final, time.Duration(tc.want)*ms, tc.final)
			}
		})
	}
}
