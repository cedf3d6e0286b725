package slo

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseRung: each form, combined forms, and what is refused.
func TestParseRung(t *testing.T) {
	good := []struct {
		in   string
		want Rung
	}{
		{"priority", Rung{}},
		{"guard=256us", Rung{Guard: true, Tau: 256 * time.Microsecond}},
		{"hold", Rung{HoldAll: true}},
		{"tpcs=0.5", Rung{TPCs: 0.5}},
		{"tpcs=0.75@1", Rung{TPCs: 0.75, TPCTasks: 1}},
		{"tpcs=0.5/req", Rung{TPCs: 0.5, PerRequest: true}},
		{"tpcs=0.75@1/req", Rung{TPCs: 0.75, TPCTasks: 1, PerRequest: true}},
		{"hold+tpcs=0.5@2", Rung{HoldAll: true, TPCs: 0.5, TPCTasks: 2}},
		{"suspend", Rung{Suspend: true}},
		{"hold+tpcs=0.25", Rung{HoldAll: true, TPCs: 0.25}},
		{"guard=64us + hold", Rung{HoldAll: true}},
	}
	for _, tc := range good {
		got, err := ParseRung(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRung(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		back, err := ParseRung(got.String())
		if err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", tc.in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "guard", "guard=0s", "guard=x", "tpcs=1", "tpcs=0", "tpcs=-0.5", "tpcs=0.5@0", "tpcs=0.5@-1", "tpcs=0.5@x", "tpcs=0.5@", "tpcs=1@1", "tpcs=0.5@1025", "tpcs=0.5@4294967297", "tpcs=0.5@2+tpcs=0.25", "hold=1", "fast", "priority+warp", "tpcs=/req", "tpcs=0.5/rq", "tpcs=0.5/req/req", "tpcs=1/req", "tpcs=0.5/req@1"} {
		if _, err := ParseRung(in); err == nil || !strings.Contains(err.Error(), "rung") {
			t.Errorf("ParseRung(%q): %v", in, err)
		}
	}
}

// TestParseLadder names the bad rung's index.
func TestParseLadder(t *testing.T) {
	l, err := ParseLadder([]string{"priority", "hold", "suspend"})
	if err != nil || len(l) != 3 || !l[1].HoldAll || !l[2].Suspend || l.UsesTPCs() {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ParseLadder([]string{"priority", "bogus"}); err == nil || !strings.Contains(err.Error(), "rung 1") {
		t.Errorf("bad rung: %v", err)
	}
	if _, err := ParseLadder(nil); err == nil {
		t.Error("an empty ladder was taken")
	}
	if got := strings.Join(DefaultLadder().Strings(), ","); got != "priority,guard=256µs,guard=64µs,hold,suspend" {
		t.Errorf("default ladder %s", got)
	}
}

// TestLadderCheck: rung 0 restrains nothing and each rung adds
// restraint in some way; rungs that restrain in different ways come in
// the user's order.
func TestLadderCheck(t *testing.T) {
	for _, tc := range []struct {
		ladder []string
		bad    string // in the error; "" for a good ladder
	}{
		{[]string{"priority", "guard=256us", "guard=64us", "hold", "suspend"}, ""},
		{[]string{"priority", "tpcs=0.75@1", "tpcs=0.75", "tpcs=0.5", "tpcs=0.25", "suspend"}, ""},
		{[]string{"priority", "hold", "tpcs=0.5", "suspend"}, ""},
		{[]string{"priority", "tpcs=0.5", "hold+tpcs=0.5"}, ""},
		{[]string{"priority", "tpcs=0.5/req", "tpcs=0.5", "tpcs=0.25/req", "tpcs=0.25", "suspend"}, ""},
		{[]string{"priority", "tpcs=0.5", "tpcs=0.5/req"}, "rung 2 (tpcs=0.5/req) restrains no more than rung 1 (tpcs=0.5)"},
		{[]string{"priority", "tpcs=0.5/req", "tpcs=0.75/req"}, "rung 2 (tpcs=0.75/req) restrains no more than rung 1 (tpcs=0.5/req)"},
		{[]string{"priority"}, ""},
		{[]string{"suspend", "priority"}, "rung 0 is suspend"},
		{[]string{"guard=64us", "hold"}, "rung 0 is guard=64µs"},
		{[]string{"priority", "suspend", "hold"}, "rung 2 (hold) restrains no more than rung 1 (suspend)"},
		{[]string{"priority", "hold", "hold"}, "rung 2 (hold)"},
		{[]string{"priority", "guard=64us", "guard=256us"}, "rung 2 (guard=256µs)"},
		{[]string{"priority", "hold", "guard=64us"}, "rung 2 (guard=64µs)"},
		{[]string{"priority", "tpcs=0.5", "tpcs=0.75"}, "rung 2 (tpcs=0.75)"},
		{[]string{"priority", "tpcs=0.5", "tpcs=0.5@1"}, "rung 2 (tpcs=0.5@1)"},
		{[]string{"priority", "priority"}, "rung 1 (priority)"},
		{[]string{"priority", "hold+tpcs=0.5", "tpcs=0.5"}, "rung 2 (tpcs=0.5)"},
	} {
		t.Run(strings.Join(tc.ladder, ","), func(t *testing.T) {
			l, err := ParseLadder(tc.ladder)
			if err != nil {
				t.Fatal(err)
			}
			err = l.Check()
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
				t.Errorf("Check() = %v, want an error with %q", err, tc.bad)
			}
		})
	}
	if err := DefaultLadder().Check(); err != nil {
		t.Errorf("the default ladder: %v", err)
	}
}

// TestLadderAlike: a mask of the first N offline tasks is the shared
// mask beside N or fewer tasks that can mask, and not beside more; with
// none that can (yet), nothing is alike; other rungs differ as written.
func TestLadderAlike(t *testing.T) {
	masks := []string{"priority", "tpcs=0.75@1", "tpcs=0.75", "tpcs=0.5@2", "tpcs=0.5", "suspend"}
	for _, tc := range []struct {
		name     string
		ladder   []string
		maskable int
		want     []bool
	}{
		{"none can mask yet", masks, 0, []bool{false, false, false, false, false}},
		{"one trainer", masks, 1, []bool{false, true, false, true, false}},
		{"two trainers", masks, 2, []bool{false, false, false, true, false}},
		{"three trainers", masks, 3, []bool{false, false, false, false, false}},
		{"a rung given twice", []string{"priority", "hold", "hold", "suspend"}, 1, []bool{false, true, false}},
		{"one rung", []string{"priority"}, 1, []bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseLadder(tc.ladder)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Alike(tc.maskable); !slices.Equal(got, tc.want) {
				t.Errorf("Alike(%d) = %v, want %v", tc.maskable, got, tc.want)
			}
		})
	}
}

// FuzzParseRung: no input panics, and what parses reads back from its
// text form as itself.
func FuzzParseRung(f *testing.F) {
	for _, s := range []string{"priority", "guard=256us", "hold+tpcs=0.25", "tpcs=0.75@1", "suspend", "tpcs=0.5@", "guard=64us + hold", "tpcs=0.5@2/req"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRung(s)
		if err != nil {
			return
		}
		back, err := ParseRung(r.String())
		if err != nil || back != r {
			t.Errorf("%q parses as %+v, whose text %q reads back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// TestPriorOfAMaskDuringRequests: a mask during requests only is
// forecast, until calibrated, from the same mask throughout's prior (a
// service's kernels meet that mask while its request is in flight); a
// rung the priors lack has none (1). The default priors have their own,
// calibrated.
func TestPriorOfAMaskDuringRequests(t *testing.T) {
	p := DefaultPriors()
	if got := p.of(Rung{TPCs: 0.25, PerRequest: true}); got != p["tpcs=0.25/req"] || got == p["tpcs=0.25"] {
		t.Errorf("default prior of tpcs=0.25/req %v; want its own, not tpcs=0.25's %v", got, p["tpcs=0.25"])
	}
	for k := range p {
		if strings.HasSuffix(k, "/req") {
			delete(p, k)
		}
	}
	for _, tc := range []struct {
		rung string
		want float64
	}{
		{"tpcs=0.5/req", p["tpcs=0.5"]},
		{"tpcs=0.25/req", p["tpcs=0.25"]},
		{"tpcs=0.6/req", 1},
		{"priority", 1},
	} {
		r, err := ParseRung(tc.rung)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.of(r); got != tc.want {
			t.Errorf("%s: prior %v, want %v", tc.rung, got, tc.want)
		}
	}
	p["tpcs=0.5/req"] = 0.97 // calibrated: its own
	if got := p.of(Rung{TPCs: 0.5, PerRequest: true}); got != 0.97 {
		t.Errorf("a calibrated prior: %v, want 0.97", got)
	}
}
