// Command pareto turns the windows of bench/gpu/pareto.py (co-location on a
// real GPU, every setting side by side in the same processes) into the
// report: per pair and setting the online job's p50 and p99 over alone and
// the offline job's throughput over alone, each the median over cycles
// with its min-max, which setting is the strongest simple alternative,
// which settings another dominates, and a plot of the trade-off (SVG).
//
//	go run ./bench/pareto -o docs/results/pareto-h100.md OUT/windows.jsonl [more.jsonl ...]
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Window is one measured window of one setting (a line of windows.jsonl).
type Window struct {
	Pair    string             `json:"pair"`
	Segment string             `json:"segment"`
	Setting string             `json:"setting"`
	Cycle   int                `json:"cycle"`
	HP      string             `json:"hp"`
	LP      string             `json:"lp"`
	Policy  string             `json:"policy"`
	GPU     *GPUSample         `json:"gpu"`
	Host    float64            `json:"host_busy"`
	HPStats *HPStats           `json:"hp_stats"`
	LPStats *LPStats           `json:"lp_stats"`
	Server  map[string]float64 `json:"server"`
	Guard   map[string]float64 `json:"policy_stats"`
}

// GPUSample is NVML's mean over a window.
type GPUSample struct {
	SMMHz    float64 `json:"sm_mhz"`
	SMMHzMin float64 `json:"sm_mhz_min"`
	Util     float64 `json:"util"`
	PowerW   float64 `json:"power_w"`
}

// HPStats are the online job's requests that ended in the window.
type HPStats struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// LPStats is the offline job's throughput in the window.
type LPStats struct {
	Steps int     `json:"steps"`
	ItS   float64 `json:"it_s"`
}

// ReadWindows reads windows.jsonl; a line that is not a window is an
// error naming its number.
func ReadWindows(r io.Reader) ([]Window, error) {
	var out []Window
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var w Window
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if w.Pair == "" || w.Segment == "" || w.Setting == "" || w.Cycle < 0 {
			return nil, fmt.Errorf("line %d: pair, segment, setting and a cycle >= 0 are needed", n)
		}
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", len(out)+1, err)
	}
	return out, nil
}

// Spread is a median over cycles with its range.
type Spread struct {
	Med, Min, Max float64
	N             int
}

func spreadOf(v []float64) Spread {
	v = slices.DeleteFunc(slices.Clone(v), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
	if len(v) == 0 {
		return Spread{Med: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{Med: med, Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// Row is one setting of one pair, aggregated over cycles.
type Row struct {
	Setting, Segment, Policy string
	// P50 and P99 are over alone, LP over LP alone, each per cycle
	// against the alone of the same cycle and MPS state.
	P50, P99, LP Spread
	// HPMs and LPIts are the absolute medians.
	HPMs, LPIts Spread
	SMMHz       Spread
	Held        float64 // launches held by the policy, median per window
	FailOpens   float64
	Tau         string // guard's threshold at the windows' ends
	// Simple: a setting without a kernel policy (what a user can pick
	// without mmk's kernel level).
	Simple bool
	// Goal: HP p50 <= 1.05x, p99 <= 1.10x, LP >= 90 % (medians).
	Goal bool
	// DominatedBy names the simple settings better on both axes (p50 and LP).
	DominatedBy []string
}

// Goal thresholds of the issue.
const (
	goalP50, goalP99, goalLP = 1.05, 1.10, 0.90
)

// isAlone reports the alone settings: "alone (...)" for the online job,
// "LP alone (...)" for the offline one.
func isAlone(s string) (hp, lp bool) {
	return strings.HasPrefix(s, "alone"), strings.HasPrefix(s, "LP alone")
}

// cycleKey names one cycle of one MPS state: what a ratio is taken in.
type cycleKey struct {
	seg   string
	cycle int
}

// alones are the alone windows by cycle: the HP's requests and the LP's
// throughput, against which that cycle's settings are taken.
func alones(ws []Window) (hp map[cycleKey]*HPStats, lp map[cycleKey]float64) {
	hp, lp = map[cycleKey]*HPStats{}, map[cycleKey]float64{}
	for _, w := range ws {
		k := cycleKey{w.Segment, w.Cycle}
		hpAlone, lpAlone := isAlone(w.Setting)
		switch {
		case hpAlone && w.HPStats != nil:
			hp[k] = w.HPStats
		case lpAlone && w.LPStats != nil:
			lp[k] = w.LPStats.ItS
		}
	}
	return hp, lp
}

// Aggregate computes the rows of one pair in the order settings first appear.
func Aggregate(ws []Window) []Row {
	aloneHP, aloneLP := alones(ws)
	var order []string
	bySetting := map[string][]Window{}
	for _, w := range ws {
		if hp, lp := isAlone(w.Setting); hp || lp {
			continue
		}
		if _, ok := bySetting[w.Setting]; !ok {
			order = append(order, w.Setting)
		}
		bySetting[w.Setting] = append(bySetting[w.Setting], w)
	}
	var rows []Row
	for _, name := range order {
		r := Row{Setting: name, Simple: true}
		var p50, p99, lp, hpms, lpits, mhz, held, fo []float64
		for _, w := range bySetting[name] {
			r.Segment, r.Policy = w.Segment, w.Policy
			r.Simple = w.Policy == ""
			k := cycleKey{w.Segment, w.Cycle}
			if a := aloneHP[k]; a != nil && w.HPStats != nil && a.P50Ms > 0 && a.P99Ms > 0 {
				p50 = append(p50, w.HPStats.P50Ms/a.P50Ms)
				p99 = append(p99, w.HPStats.P99Ms/a.P99Ms)
			}
			if w.HPStats != nil {
				hpms = append(hpms, w.HPStats.P50Ms)
			}
			if a := aloneLP[k]; a > 0 && w.LPStats != nil {
				lp = append(lp, w.LPStats.ItS/a)
			}
			if w.LPStats != nil {
				lpits = append(lpits, w.LPStats.ItS)
			}
			if w.GPU != nil {
				mhz = append(mhz, w.GPU.SMMHz)
			}
			if w.Server != nil {
				held = append(held, w.Server["held"])
				fo = append(fo, w.Server["fail_opens"])
			}
			if t, ok := w.Guard["tau_us"]; ok && w.Policy != "" && strings.HasPrefix(w.Policy, "guard") {
				r.Tau = tauString(t)
			}
		}
		r.P50, r.P99, r.LP, r.HPMs, r.LPIts, r.SMMHz = spreadOf(p50), spreadOf(p99), spreadOf(lp), spreadOf(hpms), spreadOf(lpits), spreadOf(mhz)
		r.Held, r.FailOpens = spreadOf(held).Med, spreadOf(fo).Med
		r.Goal = r.P50.Med <= goalP50 && r.P99.Med <= goalP99 && r.LP.Med >= goalLP
		rows = append(rows, r)
	}
	for i := range rows {
		for _, o := range rows {
			if o.Simple && o.Setting != rows[i].Setting && dominates(o, rows[i]) {
				rows[i].DominatedBy = append(rows[i].DominatedBy, o.Setting)
			}
		}
	}
	return rows
}

func tauString(us float64) string {
	switch {
	case us < 0:
		return "none held"
	case us == 0:
		return "all held"
	}
	return fmt.Sprintf("%g µs", us)
}

// dominates: a is no worse than b on both axes (HP p50 over alone, LP over
// alone) and better on one, by the medians.
func dominates(a, b Row) bool {
	if math.IsNaN(a.P50.Med) || math.IsNaN(b.P50.Med) || math.IsNaN(a.LP.Med) || math.IsNaN(b.LP.Med) {
		return false
	}
	return a.P50.Med <= b.P50.Med && a.LP.Med >= b.LP.Med && (a.P50.Med < b.P50.Med || a.LP.Med > b.LP.Med)
}

// Strongest is the simple alternative a user would pick: the one meeting
// the HP goal with the most LP throughput; if none meets it, the one of
// lowest HP p50 among those keeping 90 % of the LP; else the lowest p50.
func Strongest(rows []Row) (Row, string) {
	var best *Row
	pick := func(ok func(Row) bool, better func(a, b Row) bool) {
		for i, r := range rows {
			if r.Simple && ok(r) && (best == nil || better(r, *best)) {
				best = &rows[i]
			}
		}
	}
	pick(func(r Row) bool { return r.P50.Med <= goalP50 && r.P99.Med <= goalP99 },
		func(a, b Row) bool { return a.LP.Med > b.LP.Med })
	if best != nil {
		return *best, "meets the HP goal with the most LP throughput"
	}
	pick(func(r Row) bool { return r.LP.Med >= goalLP }, func(a, b Row) bool { return a.P50.Med < b.P50.Med })
	if best != nil {
		return *best, "lowest HP p50 among the simple settings keeping 90 % of the LP"
	}
	pick(func(Row) bool { return true }, func(a, b Row) bool { return a.P50.Med < b.P50.Med })
	if best != nil {
		return *best, "lowest HP p50 of the simple settings"
	}
	return Row{}, "no simple setting measured"
}
