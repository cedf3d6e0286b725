package gpu

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/mmkgpu/mmk/sim/slosuite"
)

// calibWindow is a line of calibrate.py's calib.jsonl.
type calibWindow struct {
	Mix, Setting, Load string
	Pass               int
	Trainers           map[string]struct {
		ItS float64 `json:"it_s"`
	}
	Services map[string]struct {
		ArrivalS  []float64 `json:"arrival_s"`
		ServiceMs []float64 `json:"service_ms"`
		LatencyMs []float64 `json:"latency_ms"`
	}
}

// TestCalibrateDryRun runs the calibration's protocol without a GPU
// (DRY=1: sleeping workers, a real kernel scheduler server): each mix
// runs alone and under every rung and static setting at both loads in
// each pass (a request-scoped mask among them), with its trainers (none under suspend) and every service
// (each served requests); the settings of a pass meet the same arrivals
// at a load; and the scenario suite reads what it wrote.
func TestCalibrateDryRun(t *testing.T) {
	out := dryRun(t, "about 45 s", "calibrate.sh", []string{"--mix", "vgg19:32", "--mix", "resnet152:32,bert:8", "--passes", "2",
		"--ladder", "priority,tpcs=0.97,tpcs=0.75,tpcs=0.5/req,tpcs=0.5,tpcs=0.25,hold,suspend"})
	ws := jsonLines[calibWindow](t, filepath.Join(out, "calib.jsonl"))
	settings := []string{"priority", "tpcs=0.97", "tpcs=0.75", "tpcs=0.5/req", "tpcs=0.5", "tpcs=0.25", "hold", "suspend", "prio+70%", "prio+50%"}
	seen := map[string]int{}
	gaps := map[string][]float64{} // mix/pass/load -> r50-b1's gaps under the first setting
	requests, compared := map[string]int{}, 0
	for _, w := range ws {
		key := fmt.Sprintf("%s/%d/%s", w.Mix, w.Pass, w.Setting)
		seen[key]++
		trainers := 1
		if w.Mix != "vgg19:32" {
			trainers = 2
		}
		switch {
		case w.Setting == "mix alone":
			if len(w.Trainers) != trainers || len(w.Services) != 0 {
				t.Errorf("%s: trainers %v services %d", key, w.Trainers, len(w.Services))
			}
			continue
		case w.Setting == "suspend" && len(w.Trainers) != 0, w.Setting != "suspend" && len(w.Trainers) != trainers:
			t.Errorf("%s %s: trainers %v", key, w.Load, w.Trainers)
		}
		if len(w.Services) != 3 {
			t.Errorf("%s %s: services %d, want 3", key, w.Load, len(w.Services))
		}
		for name, s := range w.Services {
			if len(s.ServiceMs) != len(s.LatencyMs) || len(s.ArrivalS) != len(s.ServiceMs) {
				t.Errorf("%s %s %s: %d arrivals, %d service times, %d latencies", key, w.Load, name, len(s.ArrivalS), len(s.ServiceMs), len(s.LatencyMs))
				continue
			}
			for i := range s.ServiceMs {
				if s.ServiceMs[i] > s.LatencyMs[i] {
					t.Errorf("%s %s %s: service %v ms past latency %v ms", key, w.Load, name, s.ServiceMs[i], s.LatencyMs[i])
				}
			}
		}
		if s, ok := w.Services["r50-b1"]; ok && len(s.ArrivalS) > 4 {
			g := diffs(s.ArrivalS[2:])
			k := fmt.Sprintf("%s/%d/%s", w.Mix, w.Pass, w.Load)
			if ref, ok := gaps[k]; !ok {
				gaps[k] = g
			} else if n := min(len(ref), len(g)) - 2; n >= 2 {
				compared++
				if !aligned(ref, g, n) {
					t.Errorf("%s %s: r50-b1's arrivals differ from the first setting's of the pass at this load", key, w.Load)
				}
			}
		}
		for name, s := range w.Services {
			requests[name] += len(s.ServiceMs)
		}
	}
	if compared < 20 {
		t.Errorf("arrivals compared in %d windows, want 20 or more", compared)
	}
	for _, name := range []string{"r50-b1", "r50-b32", "bert-b8"} {
		if requests[name] == 0 {
			t.Errorf("service %s served no request", name)
		}
	}
	for _, mix := range []string{"vgg19:32", "resnet152:32,bert:8"} {
		for pass := range 2 {
			for _, s := range append([]string{"mix alone"}, settings...) {
				want := 2
				if s == "mix alone" {
					want = 1
				}
				if k := fmt.Sprintf("%s/%d/%s", mix, pass, s); seen[k] != want {
					t.Errorf("%s: %d windows, want %d", k, seen[k], want)
				}
			}
		}
	}
	cal, err := slosuite.LoadCalibration(filepath.Join(out, "calib.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Mixes) != 2 || !cal.Mixes[1].Has(settings, []string{"r50-b1", "r50-b32", "bert-b8"}) {
		t.Errorf("the suite reads %d mixes, the second with settings %v", len(cal.Mixes), cal.Mixes[1].SettingNames())
	}
}

func diffs(v []float64) []float64 {
	var out []float64
	for i := 1; i < len(v); i++ {
		out = append(out, v[i]-v[i-1])
	}
	return out
}

// aligned reports whether n gaps of a and b agree to a millisecond (the
// workers round their times to microseconds), with either run starting
// up to two gaps later: a window may begin after the first arrival of a
// phase where the worker read its rate command before the window's start
// was taken.
func aligned(a, b []float64, n int) bool {
	close := func(x, y []float64) bool {
		for i := range n {
			if math.Abs(x[i]-y[i]) > 1e-3 {
				return false
			}
		}
		return true
	}
	for k := range 3 {
		if len(a) >= k+n && close(a[k:], b) || len(b) >= k+n && close(a, b[k:]) {
			return true
		}
	}
	return false
}
