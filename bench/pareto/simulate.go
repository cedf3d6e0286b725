package main

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

// pairJobs are the jobs of bench/gpu/pareto.py's pairs (PAIRS there) by
// the names of their kernel traces (bench/gpu/kernel_trace.py writes them).
var pairJobs = map[string]struct{ HP, LP string }{
	"main":     {"resnet50_infer_bs1", "vgg16_train_bs64"},
	"alexnet":  {"alexnet_infer_bs1", "vgg16_infer_bs8"},
	"keypoint": {"keypointrcnn_infer_bs1", "fcn_resnet50_infer_bs8"},
	"mask":     {"maskrcnn_infer_bs1", "keypointrcnn_infer_bs8"},
}

// hpThink is pareto.py's default think time of the online job.
const hpThink = 2 * time.Millisecond

// SimModel is one variant of the simulated GPU the measured settings are
// replayed on.
type SimModel struct {
	Name string
	// Priority: MPS client priority reaches the simulated GPU (else every
	// task runs at priority 0, as the simulator did before).
	Priority bool
	// Residency: resident blocks finish their wave before SMs move.
	Residency bool
	// DispatchWait: sim.GPUConfig.DispatchWait.
	DispatchWait time.Duration
	// ShareStretch: sim.GPUConfig.ShareStretch.
	ShareStretch bool
}

// SimModels are the variants compared: the model before MPS client
// priority and resident blocks were simulated; the model with both; and
// with a dispatch wait too (its length set by -sim-wait: 80 µs brings
// the main pair's MPS setting, 2.32x measured, to 2.35x simulated; 0, 10,
// 20, 40, 80 and 160 µs give 1.01x, 1.04x, 1.16x, 1.69x, 2.35x and 3.61x).
func SimModels(wait time.Duration) []SimModel {
	return []SimModel{
		{Name: "before"},
		{Name: "prio+res", Priority: true, Residency: true, ShareStretch: true},
		{Name: "prio+res+wait", Priority: true, Residency: true, ShareStretch: true, DispatchWait: wait},
	}
}

// SimRow is a measured setting next to its simulation under each model.
type SimRow struct {
	Setting       string
	P50, LP       float64   // measured medians over alone
	SimP50, SimLP []float64 // per SimModel, over alone simulated on the same GPU model
}

// SimReport is one pair's settings measured and simulated.
type SimReport struct {
	Pair   string
	Models []SimModel
	Rows   []SimRow
	// RhoP50 and RhoLP are Spearman's rank correlation between measured
	// and simulated, per SimModel.
	RhoP50, RhoLP []float64
	// SelfP50 and SelfLP are the measurement's rank agreement with itself,
	// cycle against cycle (SelfAgreement): how far its ranks are noise.
	SelfP50, SelfLP float64
}

// setting is how a measured setting is simulated.
type setting struct {
	mps       bool
	lpPrio    int
	lpPercent int
	policy    string
	guard     kernelsched.GuardConfig
}

var percentRe = regexp.MustCompile(`, (\d+) %`)

// settingOf maps a measured row to its simulation: its MPS state from the
// segment, the LP's priority and share from the setting's name (as
// pareto.py names them), the policy and its keys from the window's policy
// line. ok is false for a setting it cannot map.
func settingOf(r Row) (setting, bool) {
	s := setting{mps: r.Segment == "mps", policy: "fifo", lpPercent: 100}
	switch {
	case !s.mps && r.Setting == "default":
		return s, true
	case !s.mps:
		return s, false
	}
	if r.Setting != "MPS" {
		s.lpPrio = 1 // every other MPS setting runs the LP at priority 1
	}
	if m := percentRe.FindStringSubmatch(r.Setting); m != nil {
		p, err := strconv.Atoi(m[1])
		if err != nil || p < 1 || p > 100 {
			return s, false
		}
		s.lpPercent = p
	}
	if r.Policy != "" {
		c, err := server.ParseCommand("policy " + r.Policy)
		if err != nil {
			return s, false
		}
		s.policy, s.guard = c.Policy, c.Config.Guard
	}
	return s, true
}

// Simulate replays every mappable setting of one pair on the kernel
// traces in dir, under each SimModel. Each task's host time is scaled so
// that alone it takes the time measured alone in the same run (the
// online job's alone p50, the offline job's alone step time), and its
// profile comes from a simulated profiling run, as mmk's profiling phase
// does.
func Simulate(pair string, ws []Window, rows []Row, dir string, dur time.Duration, models []SimModel) (*SimReport, error) {
	jobs, ok := pairJobs[pair]
	if !ok {
		return nil, fmt.Errorf("pair %q: no kernel traces known for it", pair)
	}
	hpAlone, lpAlone := aloneMedians(ws)
	if hpAlone <= 0 || lpAlone <= 0 {
		return nil, fmt.Errorf("pair %q: no alone measurement under MPS", pair)
	}
	hpTrace, err := trace.LoadKernelTrace(jobs.HP, dir)
	if err != nil {
		return nil, err
	}
	lpTrace, err := trace.LoadKernelTrace(jobs.LP, dir)
	if err != nil {
		return nil, err
	}
	hpTrace.IterTime = time.Duration(hpAlone * 1e6)
	lpTrace.IterTime = time.Duration(1e9 / lpAlone)
	rep := &SimReport{Pair: pair}
	type base struct {
		hp, lp sim.Task
		hpP50  time.Duration
		lpRate float64
	}
	// The tasks calibrated and profiled, and their alone results, by the
	// GPU they run on (the models share the time-sliced one).
	bases := map[sim.GPUConfig]*base{}
	baseOf := func(gpu sim.GPUConfig) (*base, error) {
		if b := bases[gpu]; b != nil {
			return b, nil
		}
		b := &base{
			hp: sim.Task{Name: "hp", Trace: hpTrace, Online: true, Priority: 0, Arrival: sim.Closed, Think: hpThink},
			lp: sim.Task{Name: "lp", Trace: lpTrace, Priority: 1, Arrival: sim.BackToBack},
		}
		for _, t := range []*sim.Task{&b.hp, &b.lp} {
			sc, err := sim.CalibrateHostScale(t.Trace, gpu, kernelsched.Config{})
			if err != nil {
				return nil, err
			}
			t.HostScale = sc
			if t.Profile, err = sim.ProfileAlone(*t, gpu, kernelsched.Config{}, 2*len(t.Trace.Iterations)); err != nil {
				return nil, err
			}
		}
		hp, err := sim.Simulate(sim.Config{Policy: "fifo", Duration: dur, GPU: gpu, Tasks: []sim.Task{b.hp}, Seed: 1})
		if err != nil {
			return nil, err
		}
		lp, err := sim.Simulate(sim.Config{Policy: "fifo", Duration: dur, GPU: gpu, Tasks: []sim.Task{b.lp}, Seed: 1})
		if err != nil {
			return nil, err
		}
		b.hpP50, b.lpRate = hp.Tasks[0].P50, lp.Tasks[0].PerSecond
		bases[gpu] = b
		return b, nil
	}
	for _, r := range rows {
		st, ok := settingOf(r)
		if !ok || math.IsNaN(r.P50.Med) || math.IsNaN(r.LP.Med) {
			continue
		}
		row := SimRow{Setting: r.Setting, P50: r.P50.Med, LP: r.LP.Med}
		for _, m := range models {
			gpu := gpuOf(m, st.mps)
			b, err := baseOf(gpu)
			if err != nil {
				return nil, fmt.Errorf("pair %q: %w", pair, err)
			}
			hp, lp := b.hp, b.lp
			lp.MPSPercent = st.lpPercent
			if m.Priority {
				lp.MPSPriority = st.lpPrio
			}
			res, err := sim.Simulate(sim.Config{Policy: st.policy, Duration: dur, GPU: gpu, Seed: 1,
				Sched: kernelsched.Config{Guard: st.guard}, Tasks: []sim.Task{hp, lp}})
			if err != nil {
				return nil, fmt.Errorf("pair %q, %s: %w", pair, r.Setting, err)
			}
			row.SimP50 = append(row.SimP50, float64(res.Tasks[0].P50)/float64(b.hpP50))
			row.SimLP = append(row.SimLP, res.Tasks[1].PerSecond/b.lpRate)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Models = models
	for mi := range models {
		var mp, sp, ml, sl []float64
		for _, r := range rep.Rows {
			mp, sp = append(mp, r.P50), append(sp, r.SimP50[mi])
			ml, sl = append(ml, r.LP), append(sl, r.SimLP[mi])
		}
		rep.RhoP50 = append(rep.RhoP50, Spearman(mp, sp))
		rep.RhoLP = append(rep.RhoLP, Spearman(ml, sl))
	}
	rep.SelfP50, rep.SelfLP = SelfAgreement(ws)
	return rep, nil
}

// gpuOf is the simulated GPU of a segment: the time-sliced default
// without MPS (calibrated in docs/results/kernelsched.md), the MPS model
// with this variant's residency under MPS.
func gpuOf(m SimModel, mps bool) sim.GPUConfig {
	g := sim.DefaultGPU()
	if mps {
		g.Model, g.BlockResidency, g.DispatchWait, g.ShareStretch = sim.MPS, m.Residency, m.DispatchWait, m.ShareStretch
	}
	return g
}

// aloneMedians are the medians over cycles of the online job's p50 (ms)
// and the offline job's throughput (it/s) alone under MPS.
func aloneMedians(ws []Window) (hpMs, lpIts float64) {
	var hp, lp []float64
	for _, w := range ws {
		if w.Segment != "mps" {
			continue
		}
		h, l := isAlone(w.Setting)
		if h && w.HPStats != nil {
			hp = append(hp, w.HPStats.P50Ms)
		}
		if l && w.LPStats != nil {
			lp = append(lp, w.LPStats.ItS)
		}
	}
	return spreadOf(hp).Med, spreadOf(lp).Med
}

// Spearman is the rank correlation of x and y (ties take their mean
// rank); NaN when fewer than 3 pairs or one side has no spread.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 3 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	n := float64(len(rx))
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// writeSim appends a pair's simulation table to the report.
func writeSim(b *bytes.Buffer, rep *SimReport) {
	fmt.Fprintf(b, "\nSimulated by the kernel-level simulator (`sim`) on this pair's H100 kernel traces, each ratio over alone simulated on the same GPU model; without MPS the time-sliced GPU, under MPS %s. Spearman rank correlation with the measured medians:", describe(rep.Models))
	for mi, m := range rep.Models {
		fmt.Fprintf(b, " %s: HP p50 %s, LP %s;", m.Name, rho(rep.RhoP50[mi]), rho(rep.RhoLP[mi]))
	}
	fmt.Fprintf(b, " one measured cycle against another (median over pairs of cycles; how far the ranks are the noise's, a median over cycles being steadier than one cycle): HP p50 %s, LP %s.",
		rho(rep.SelfP50), rho(rep.SelfLP))
	b.WriteString("\n\n| setting | measured p50 / alone | ")
	for _, m := range rep.Models {
		fmt.Fprintf(b, "sim p50, %s | ", m.Name)
	}
	b.WriteString("measured LP / alone | ")
	for _, m := range rep.Models {
		fmt.Fprintf(b, "sim LP, %s | ", m.Name)
	}
	b.WriteString("\n|" + strings.Repeat(" --- |", 2+2*len(rep.Models)) + "\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(b, "| %s | %.2fx | ", r.Setting, r.P50)
		for _, v := range r.SimP50 {
			fmt.Fprintf(b, "%.2fx | ", v)
		}
		fmt.Fprintf(b, "%.0f %% | ", 100*r.LP)
		for _, v := range r.SimLP {
			fmt.Fprintf(b, "%.0f %% | ", 100*v)
		}
		b.WriteString("\n")
	}
}

// describe names what each model simulates.
func describe(ms []SimModel) string {
	var parts []string
	for _, m := range ms {
		d := "processor sharing of SMs"
		if m.Priority {
			d += ", MPS client priority"
		}
		if m.Residency {
			d += ", resident blocks finish their wave"
		}
		if m.ShareStretch {
			d += ", a kernel held to its MPS share runs more waves"
		}
		if m.DispatchWait > 0 {
			d += fmt.Sprintf(", a %s dispatch wait at equal priority", m.DispatchWait)
		}
		parts = append(parts, fmt.Sprintf("*%s*: %s", m.Name, d))
	}
	return strings.Join(parts, "; ")
}

func rho(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
