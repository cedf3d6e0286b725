package main

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func win(setting string, cycle int, p50, p99, lp float64) Window {
	w := Window{Pair: "p", Segment: "mps", Setting: setting, Cycle: cycle}
	if p50 > 0 {
		w.HPStats = &HPStats{N: 100, P50Ms: p50, P99Ms: p99}
	}
	if lp > 0 {
		w.LPStats = &LPStats{Steps: 10, ItS: lp}
	}
	return w
}

func TestReadWindows(t *testing.T) {
	ws, err := ReadWindows(strings.NewReader(`{"pair":"p","segment":"mps","setting":"MPS","cycle":1,"hp_stats":{"n":3,"p50_ms":2,"p99_ms":3}}

{"pair":"p","segment":"mps","setting":"alone (MPS)","cycle":0}`))
	if err != nil || len(ws) != 2 || ws[0].HPStats.P50Ms != 2 {
		t.Fatalf("%+v, %v", ws, err)
	}
	for _, bad := range []string{`{"pair":"p"`, `{"pair":"p","segment":"s","setting":"x","cycle":-1}`, `[]`} {
		if _, err := ReadWindows(strings.NewReader("\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: error %v, want one naming line 2", bad, err)
		}
	}
}

// TestAggregate: every ratio is taken against alone of its own cycle, and
// the medians, ranges, goal and dominance follow.
func TestAggregate(t *testing.T) {
	ws := []Window{
		win("alone (MPS)", 0, 4, 5, 0), win("LP alone (MPS)", 0, 0, 0, 20),
		win("alone (MPS)", 1, 2, 2.5, 0), win("LP alone (MPS)", 1, 0, 0, 10),
		win("alone (MPS)", 2, 3, 4, 0), win("LP alone (MPS)", 2, 0, 0, 30),
		// Twice alone in every cycle, 95 % of the LP: dominated by prio.
		win("MPS", 0, 8, 10, 19), win("MPS", 1, 4, 5, 9.5), win("MPS", 2, 6, 8, 28.5),
		// 1.02x, LP 95 %: meets the HP goal, not the LP's (90 % needed: meets).
		win("MPS, LP prio 1", 0, 4.08, 5, 19), win("MPS, LP prio 1", 1, 2.04, 2.5, 9.5), win("MPS, LP prio 1", 2, 3.06, 4, 28.5),
	}
	g := win("guard", 0, 4, 5, 20)
	g.Policy = "guard"
	g.Guard = map[string]float64{"tau_us": -1}
	ws = append(ws, g)
	rows := Aggregate(ws)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	mps, prio, guard := rows[0], rows[1], rows[2]
	if mps.P50.Med != 2 || mps.P50.Min != 2 || mps.P50.Max != 2 || mps.P50.N != 3 {
		t.Errorf("MPS p50 ratio %+v, want 2x in every cycle", mps.P50)
	}
	if math.Abs(mps.LP.Med-0.95) > 1e-9 {
		t.Errorf("MPS LP %v, want 0.95", mps.LP.Med)
	}
	if mps.Goal || !prio.Goal {
		t.Errorf("goal: MPS %v, prio %v; want false, true", mps.Goal, prio.Goal)
	}
	if len(mps.DominatedBy) != 1 || mps.DominatedBy[0] != "MPS, LP prio 1" {
		t.Errorf("MPS dominated by %v", mps.DominatedBy)
	}
	if guard.Simple || guard.Tau != "none held" || guard.P50.Med != 1 || guard.LP.Med != 1 || len(guard.DominatedBy) != 0 {
		t.Errorf("guard row %+v", guard)
	}
	if s, _ := Strongest(rows); s.Setting != "MPS, LP prio 1" {
		t.Errorf("strongest simple alternative %q, want MPS, LP prio 1", s.Setting)
	}
}

func TestStrongestFallbacks(t *testing.T) {
	row := func(name string, p50, lp float64) Row {
		return Row{Setting: name, Simple: true, P50: Spread{Med: p50}, P99: Spread{Med: p50}, LP: Spread{Med: lp}}
	}
	tests := []struct {
		rows []Row
		want string
	}{
		{[]Row{row("a", 1.2, 0.95), row("b", 1.1, 0.92), row("c", 1.0, 0.5)}, "c"},
		{[]Row{row("a", 1.2, 0.95), row("b", 1.1, 0.92), row("c", 1.08, 0.5)}, "b"},
		{[]Row{row("a", 1.2, 0.5), row("b", 1.1, 0.2)}, "b"},
	}
	for _, tc := range tests {
		if got, _ := Strongest(tc.rows); got.Setting != tc.want {
			t.Errorf("%+v: %q, want %q", tc.rows, got.Setting, tc.want)
		}
	}
}

func TestPlotIsSVG(t *testing.T) {
	rows := []Row{{Setting: "a <b>", Simple: true, P50: Spread{1, 1, 1.2, 3}, P99: Spread{1.1, 1, 1.3, 3}, LP: Spread{0.9, 0.8, 1, 3}},
		{Setting: "nan", P50: Spread{Med: math.NaN()}, P99: Spread{Med: math.NaN()}, LP: Spread{Med: math.NaN()}}}
	var v struct{}
	if err := xml.Unmarshal(Plot("p&q", rows), &v); err != nil {
		t.Fatalf("not XML: %v", err)
	}
}

func FuzzReadWindows(f *testing.F) {
	f.Add(`{"pair":"p","segment":"mps","setting":"MPS","cycle":1,"hp_stats":{"n":3,"p50_ms":2,"p99_ms":3},"lp_stats":{"steps":2,"it_s":1}}`)
	f.Add(`{"pair":"p","segment":"mps","setting":"alone (MPS)","cycle":0,"server":{"held":3},"policy_stats":{"tau_us":-1}}`)
	f.Fuzz(func(t *testing.T, in string) {
		ws, err := ReadWindows(strings.NewReader(in))
		if err != nil {
			return
		}
		rows := Aggregate(ws)
		Strongest(rows)
		var v struct{}
		if err := xml.Unmarshal(Plot("p", rows), &v); err != nil {
			t.Fatalf("plot of %q is not XML: %v", in, err)
		}
	})
}

// TestRunRenames: a renamed setting shows under its new name only, and
// the report says which names it changed.
func TestRunRenames(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "w.jsonl")
	lines := `{"pair":"p","segment":"mps","setting":"alone (MPS)","cycle":0,"hp_stats":{"n":3,"p50_ms":2,"p99_ms":3}}
{"pair":"p","segment":"mps","setting":"LP alone (MPS)","cycle":0,"lp_stats":{"steps":5,"it_s":10}}
{"pair":"p","segment":"mps","setting":"guard (mmk default)","cycle":0,"policy":"guard","hp_stats":{"n":3,"p50_ms":2,"p99_ms":3},"lp_stats":{"steps":5,"it_s":9}}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.md")
	if err := run(out, "t", map[string]string{"guard (mmk default)": "guard"}, simOptions{}, []string{in}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if !strings.Contains(s, "| guard |") || !strings.Contains(s, `"guard (mmk default)" as "guard".`) || strings.Contains(s, "| guard (mmk default) |") {
		t.Errorf("report does not rename the setting:\n%s", s)
	}
}
