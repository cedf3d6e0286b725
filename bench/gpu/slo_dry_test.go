package gpu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSLODryRun runs the SLO benchmark's protocol without a GPU (DRY=1:
// sleeping workers, a real kernel scheduler server with the latency
// controller): every setting runs through every load phase, the papers'
// policies at the high phase, a fixed mask (mask=F) among the static
// settings, a second controller aiming at half the budget (mmk-aim=0.5)
// beside mmk, with its rung in slo.jsonl under its own name, each window holds the services' and
// trainers' numbers, and the report answers the questions.
func TestSLODryRun(t *testing.T) {
	out := dryRun(t, "about 40 s", "slo.sh", []string{"1", "2"}, "SLO_ARGS=--slo svc-b1=p99=50ms --rates svc-b1=20/50/80 --settings together,prio,prio+70%,prio+50%,hold,mmk,mask=0.875,mmk-aim=0.5")
	type window struct {
		Round    int
		Setting  string
		Phase    string
		Rates    map[string]float64
		Services map[string]struct {
			N       int     `json:"n"`
			BoundMs float64 `json:"bound_ms"`
		}
		Trainers map[string]struct {
			ItS float64 `json:"it_s"`
		}
	}
	ws := jsonLines[window](t, filepath.Join(out, "windows.jsonl"))
	seen := map[string][]string{}
	want := map[string]float64{"low": 20, "medium": 50, "high": 80, "low-again": 20}
	rated := 0
	for _, w := range ws {
		if r, ok := w.Rates["svc-b1"]; ok {
			rated++
			if r != want[w.Phase] {
				t.Errorf("%s %s: svc-b1 at %g requests a second, want %g (--rates)", w.Setting, w.Phase, r, want[w.Phase])
			}
		}
		seen[w.Setting] = append(seen[w.Setting], w.Phase)
		if w.Setting == "mask=0.875" && len(w.Trainers) == 0 {
			t.Errorf("mask=0.875 %s: no trainer ran", w.Phase)
		}
		if w.Round != 2 {
			t.Errorf("round %d, want 2", w.Round)
		}
		for name, s := range w.Services {
			if s.N == 0 || (name == "svc-b1" && s.BoundMs != 50) {
				t.Errorf("%s %s: service %s %+v", w.Setting, w.Phase, name, s)
			}
		}
	}
	if rated == 0 {
		t.Error("no window records svc-b1's rate")
	}
	for _, s := range []string{"together", "prio", "prio+70%", "prio+50%", "hold", "mmk", "mask=0.875", "mmk-aim=0.5"} {
		if !slices.Equal(seen[s], []string{"low", "medium", "high", "low-again"}) {
			t.Errorf("setting %s ran phases %v", s, seen[s])
		}
	}
	for _, s := range []string{"fikit", "mmk-check", "hpf", "piv"} {
		if !slices.Equal(seen[s], []string{"high"}) {
			t.Errorf("paper policy %s ran phases %v", s, seen[s])
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Phase high", "| **mmk** |", "| mask=0.875 |", "Whole run: mmk's trainers", "batch-1 service under mmk",
		"| **mmk-aim=0.5** |", "Whole run: mmk-aim=0.5's trainers"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "round-2.svg")); err != nil {
		t.Error(err)
	}
	type rung struct{ Setting string }
	ctl := map[string]int{}
	for _, r := range jsonLines[rung](t, filepath.Join(out, "slo.jsonl")) {
		ctl[r.Setting]++
	}
	if ctl["mmk"] == 0 || ctl["mmk-aim=0.5"] == 0 || len(ctl) != 2 {
		t.Errorf("slo.jsonl's rung lines by setting %v, want mmk's and mmk-aim=0.5's", ctl)
	}
}
