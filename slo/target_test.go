package slo

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestParse: the text forms taken, and each bad one refused with the
// part at fault named.
func TestParse(t *testing.T) {
	good := []struct {
		in   string
		want Target
	}{
		{"p99=25ms", Target{Percentile: 99, Bound: 25 * time.Millisecond}},
		{"p99.9=1.5x", Target{Percentile: 99.9, Ratio: 1.5}},
		{"P50=3ms", Target{Percentile: 50, Bound: 3 * time.Millisecond}},
		{" p95 = 800us ", Target{Percentile: 95, Bound: 800 * time.Microsecond}},
		{"p99=2s", Target{Percentile: 99, Bound: 2 * time.Second}},
		{"p90=1x", Target{Percentile: 90, Ratio: 1}},
		{"p99=\t25ms\n", Target{Percentile: 99, Bound: 25 * time.Millisecond}},
		{"p99=100us", Target{Percentile: 99, Bound: 100 * time.Microsecond}},
		{"p99=.5s", Target{Percentile: 99, Bound: 500 * time.Millisecond}},
	}
	for _, tc := range good {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, why string }{
		{"25ms", "want p<percentile>=<bound>"},
		{"p99=25", "has no unit"},
		{"p99=0ms", "must be positive"},
		{"p99=-5ms", "must be positive"},
		{"p100=5ms", "unknown percentile"},
		{"p0=5ms", "unknown percentile"},
		{"pNaN=5ms", "unknown percentile"},
		{"q99=5ms", "must be written p<number>"},
		{"p99=", "no bound"},
		{"p99=0.5x", "below 1x"},
		{"p99=NaNx", "not a number"},
		{"p99=2000x", "above"},
		{"p99=abc", "neither a duration"},
		{"p99=2h", "longer than"},
		{"p0x1.8cp6=25ms", "unknown percentile"},
		{"p+99=25ms", "unknown percentile"},
		{"p9_9=25ms", "unknown percentile"},
		{"p1e2=25ms", "unknown percentile"},
		{"p99=+25ms", "neither a duration"},
		{"p99=1e1x", "not a number"},
		{"p99=Infx", "not a number"},
		{"p99=1ns", "shorter than 100µs"},
		{"p99=99us", "shorter than 100µs"},
		{"p99=" + strings.Repeat("z", 5000), "neither a duration"},
		{"p" + strings.Repeat("9", 5000) + "=25ms", "unknown percentile"},
		{"p99=" + strings.Repeat("9", 5000), "has no unit"},
		{"p99=0." + strings.Repeat("0", 5000) + "1ms", "must be positive"},
		{"p99=1" + strings.Repeat("0", 5000) + "x", "above"},
	}
	for _, tc := range bad {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "latency target") {
			t.Errorf("Parse(%.40q) error %v, want one saying %q", tc.in, err, tc.why)
		}
		// An error quotes a bad value, not all of it (issue 54: a
		// 5,000-byte value came back whole).
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("Parse(%.20q...) error of %d bytes", tc.in, len(err.Error()))
		}
	}
}

// TestTargetText: String reads back, and JSON carries the text form.
func TestTargetText(t *testing.T) {
	type spec struct {
		SLO Target `json:"slo,omitzero"`
	}
	for _, in := range []string{"p99=25ms", "p99.9=1.5x", "p50=800µs", "p95=1.25s"} {
		tg := MustParse(in)
		back, err := Parse(tg.String())
		if err != nil || back != tg {
			t.Errorf("%q: String %q parses to %+v, %v", in, tg.String(), back, err)
		}
		b, err := json.Marshal(spec{tg})
		if err != nil {
			t.Fatal(err)
		}
		var s spec
		if err := json.Unmarshal(b, &s); err != nil || s.SLO != tg {
			t.Errorf("%q: JSON %s reads back as %+v, %v", in, b, s.SLO, err)
		}
	}
	var s spec
	if err := json.Unmarshal([]byte(`{"slo":"p99=7"}`), &s); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("a bad target in JSON: %v", err)
	}
	if b, _ := json.Marshal(spec{}); string(b) != `{}` {
		t.Errorf("no target marshals as %s", b)
	}
}

// TestResolve: an absolute bound stands; a ratio waits for the latency
// alone.
func TestResolve(t *testing.T) {
	abs, ratio := MustParse("p99=25ms"), MustParse("p99=1.5x")
	if b, ok := abs.Resolve(0); !ok || b != 25*time.Millisecond {
		t.Errorf("absolute: %v %v", b, ok)
	}
	if _, ok := ratio.Resolve(0); ok {
		t.Error("a ratio resolved without the latency alone")
	}
	if b, ok := ratio.Resolve(10 * time.Millisecond); !ok || b != 15*time.Millisecond {
		t.Errorf("ratio: %v %v", b, ok)
	}
	if got := MustParse("p99.9=1ms").Budget(); got < 0.00099 || got > 0.00101 {
		t.Errorf("p99.9 budget %v", got)
	}
}

// FuzzParse: no input panics, and what parses prints back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99=25ms", "p99.9=1.5x", "p50=3", "p=", "p1e2=1ms", "p99=1e3x", "p99=9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(tg.String())
		if err != nil || back != tg {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, tg, tg.String(), back, err)
		}
		if tg.Percentile < MinPercentile || tg.Percentile > MaxPercentile || (tg.Bound <= 0) == (tg.Ratio < 1) {
			t.Fatalf("%q parsed to an invalid %+v", s, tg)
		}
	})
}

// TestNeed: a ratio target needs the headroom over its ratio, an
// absolute one the headroom times alone over the bound once alone is
// known, no target nothing.
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		target string
		alone  time.Duration
		want   float64
	}{
		{"p99=1.25x", 0, PlacementHeadroom / 1.25},
		{"p99=2x", 5 * time.Millisecond, PlacementHeadroom / 2},
		{"p99=20ms", 10 * time.Millisecond, PlacementHeadroom / 2},
		{"p99=20ms", 0, 0},
		{"", time.Millisecond, 0},
	} {
		var tg Target
		if tc.target != "" {
			tg = MustParse(tc.target)
		}
		if got := tg.Need(tc.alone); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%q alone %v: need %v, want %v", tc.target, tc.alone, got, tc.want)
		}
	}
}
