package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// The SLO map: which policy wins over the services' latency targets and
// the load, on each workload.
var (
	// mapTights are the targets: every service's p99 within this many
	// times its p99 alone.
	mapTights = []float64{1.25, 1.5, 2, 3.5, 5}
	// mapPols are the policies on the map: the strongest simple
	// alternative (mps-prio), the published MIG policies, mmk and mmk
	// with MIG managed.
	mapPols = []string{jobsim.JobMPSPrio, jobsim.JobMIGER, jobsim.JobMISO, jobsim.JobMMK, mmkMIG}
	// mapOpenB is the openb part of the map: the first 1,000 jobs on 28
	// GPUs (the congested case).
	mapOpenB = workload{name: "openb:1000", gpus: 28}
)

// mapOpenBSeeds is the most seeds the map runs openb with: its jobs are
// the trace's whatever the seed (the seed draws the requests and trains
// the predictor), and each run takes seconds.
const mapOpenBSeeds = 2

// mapSeeds is how many seeds the map runs w with.
func (w workload) mapSeeds(seeds int) int {
	if w.name == mapOpenB.name {
		return min(seeds, mapOpenBSeeds)
	}
	return seeds
}

// mmkMIG is mmk with MIG managed: Algorithm 1's layout search on, MIG
// mode on every GPU; mmkOracle is mmk deciding with the ground truth.
const (
	mmkMIG    = jobsim.JobMMK + "-" + jobsim.OptFixedMIG
	mmkOracle = jobsim.JobMMK + "+" + jobsim.OptOracle
)

// regretTights are the targets at which placement regret is measured, at
// load 1.
var regretTights = []float64{1.25, 2, 5}

// Margins of the map's verdicts (issue 35's acceptance).
const (
	looseFrom      = 2.0  // targets at least this loose
	tightTo        = 1.5  // targets at most this tight
	looseJCT       = 1.02 // mmk's JCT at most this times mps-prio's, loose
	looseSLOPoints = 0.2  // mmk's attainment at most this far below, loose
	tightSLOPoints = 15.0 // mmk's attainment this far above mps-prio's, tight
	tightJCT       = 1.3  // at most this times mps-prio's JCT, tight
	migerSLOPoints = 5.0  // mmk's attainment at most this far below MIGER's
	migerJCT       = 0.5  // at most this times MIGER's JCT
	// winTolerance is how far below the best share of services holding
	// their target a policy may be and still win the cell on JCT.
	winTolerance = 0.01
)

// mapWorkloads are the map's workloads: the synthetic ones and, where
// the trace is there, openb.
func mapWorkloads(openb bool) []workload {
	out := slices.Clone(workloads)
	if openb {
		out = append(out, mapOpenB)
	}
	return out
}

// targetText is the objective of tightness t.
func targetText(t float64) string { return fmt.Sprintf("p99=%gx", t) }

// mapRun is one run of the map.
func mapRun(w workload, t, load float64, seed int, policy string) run {
	return run{workload: w.name, gpus: w.gpus, load: load, seed: uint64(seed), policy: policy, mig: jobsim.DefaultMIGReconfig, slo: targetText(t)}
}

// mapRuns lists the map's runs.
func mapRuns(seeds int, openb bool) []run {
	var out []run
	for _, w := range mapWorkloads(openb) {
		for _, t := range mapTights {
			for _, l := range loads {
				for s := 1; s <= w.mapSeeds(seeds); s++ {
					for _, p := range mapPols {
						out = append(out, mapRun(w, t, l, s, p))
					}
					if l == 1 && slices.Contains(regretTights, t) {
						out = append(out, mapRun(w, t, l, s, mmkOracle))
					}
				}
			}
		}
	}
	return out
}

// mapMean is a policy's mean over the seeds in one cell.
func (p *report) mapMean(w workload, t, load float64, policy string) mean {
	return average(p.seedsLike(mapRun(w, t, load, 1, policy)))
}

// winner is the cell's winning policy: among those whose share of
// services holding their target is within winTolerance of the best, the
// lowest mean JCT.
func (p *report) winner(w workload, t, load float64) string {
	ms := map[string]mean{}
	best := 0.0
	for _, pol := range mapPols {
		m := p.mapMean(w, t, load, pol)
		if m.n == 0 {
			continue
		}
		ms[pol] = m
		best = max(best, m.heldShare())
	}
	win := ""
	for _, pol := range mapPols {
		m, ok := ms[pol]
		if !ok || m.heldShare() < best-winTolerance {
			continue
		}
		if win == "" || m.jct < ms[win].jct {
			win = pol
		}
	}
	return win
}

// cellTable writes a table of the map's cells, a row per target and a
// column per load, each cell as cell says.
func cellTable(b *bytes.Buffer, cell func(tight, load float64) string) {
	b.WriteString("| target \\ load |")
	for _, l := range loads {
		fmt.Fprintf(b, " %g |", l)
	}
	b.WriteString("\n|---|")
	for range loads {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, t := range mapTights {
		fmt.Fprintf(b, "| %s |", targetText(t))
		for _, l := range loads {
			fmt.Fprintf(b, " %s |", cell(t, l))
		}
		b.WriteString("\n")
	}
}

// points is the difference in percentage points between two shares.
func points(a, b float64) string { return fmt.Sprintf("%+.1f", 100*(a-b)) }

// sloMap writes the map's section and its plot.
func (p *report) sloMap(b *bytes.Buffer, dir string, openb bool) error {
	b.WriteString("## Which policy wins, over latency targets and load\n\n")
	fmt.Fprintf(b, "Every service's target is `p99=Tx`: 99 %% of its requests within T times its p99 alone (its own requests through the whole GPU with nothing else, as mmkd measures a service alone); T from %v, the load from %v, seeds 1-%d (openb: its first 1,000 jobs on %d GPUs, the recorded arrivals at load 1, a load L arriving L times as fast; seeds 1-%d). Policies: %s. mmk is Algorithm 1 with its options (%s): MIG mode off, no cap on an instance's jobs, a service placed only where the predictor's speed for it and for every service beside it, next to the services there (at their load) and under MPS client priority, meets its need (the least speed at which it holds its target as an M/D/1 queue, with %.2fx headroom for the memory interference priority leaves), waiting at most %v for such a place before it goes where it fits (the needs of services already placed still hold); %s is the same with MIG managed.\n\n",
		mapTights, loads, p.seeds, mapOpenB.gpus, mapOpenB.mapSeeds(p.seeds), strings.Join(mapPols, ", "), strings.Join(jobsim.MMKOptions, ", "), jobsim.DefaultSLOHeadroom, jobsim.DefaultSLOMaxWait, mmkMIG)
	fmt.Fprintf(b, "A cell's winner: among the policies whose share of services holding their target is within %.0f point of the best, the one of least mean JCT. **SLO attainment** is the share of all requests within target, **held** the share of services whose target held (at least 99 %% of their requests within it). The strongest simple alternative is **%s**.\n\n", 100*winTolerance, jobsim.JobMPSPrio)
	svg, err := p.mapPlot(dir, openb)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "![SLO map](%s)\n\n", svg)
	for _, w := range mapWorkloads(openb) {
		fmt.Fprintf(b, "### %s on %d GPUs\n\n", w.name, w.gpus)
		b.WriteString("Winner per cell:\n\n")
		cellTable(b, func(t, l float64) string { return p.winner(w, t, l) })
		against := func(other string) func(t, l float64) string {
			return func(t, l float64) string {
				m, o := p.mapMean(w, t, l, jobsim.JobMMK), p.mapMean(w, t, l, other)
				return fmt.Sprintf("%.2fx, %s, %s (%s, %.0f %%)", m.jct/o.jct, points(m.req.Attainment(), o.req.Attainment()), points(m.heldShare(), o.heldShare()), slo(o), 100*o.heldShare())
			}
		}
		fmt.Fprintf(b, "\nmmk against %s per cell: mean JCT ratio; SLO attainment and services held, differences in points; then %s's attainment and held.\n\n", jobsim.JobMPSPrio, jobsim.JobMPSPrio)
		cellTable(b, against(jobsim.JobMPSPrio))
		fmt.Fprintf(b, "\nmmk against %s per cell, the same columns.\n\n", jobsim.JobMIGER)
		cellTable(b, against(jobsim.JobMIGER))
		b.WriteString("\n")
		p.mapVerdicts(b, w)
	}
	p.regret(b, openb)
	return nil
}

// regret writes what deciding with the predictor costs mmk against
// deciding with the ground truth (the oracle option), at load 1: the
// placement regret, beside the predictor's error.
func (p *report) regret(b *bytes.Buffer, openb bool) {
	b.WriteString("### Placement regret\n\n")
	fmt.Fprintf(b, "mmk deciding with its predictor against mmk deciding with the simulator's ground truth (`%s`), load 1, means of the seeds: the JCT it loses (its JCT over the oracle's, less 1), the SLO attainment and the services held it loses (points), and the predictor's median relative error against the ground truth over the placements made. The predictor for a geometry is trained on that GPU's samples where mmk has them (the H100 campaign for H100-80GB), else on the H200 profiles (this map: A100-80GB geometry, H200 profiles).\n\n", mmkOracle)
	b.WriteString("| workload | target | JCT regret | SLO attainment regret | held regret | predictor error |\n|---|---|---|---|---|---|\n")
	for _, w := range mapWorkloads(openb) {
		for _, t := range regretTights {
			m, o := p.mapMean(w, t, 1, jobsim.JobMMK), p.mapMean(w, t, 1, mmkOracle)
			if m.n == 0 || o.n == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %+.1f %% | %s | %s | %.1f %% |\n", w.name, targetText(t), 100*(m.jct/o.jct-1), points(o.req.Attainment(), m.req.Attainment()), points(o.heldShare(), m.heldShare()), 100*m.predErr)
		}
	}
	b.WriteString("\n")
}

// mapVerdicts writes, for one workload, the cells where mmk meets and
// misses issue 35's margins: loose targets (>= 2x), JCT within 1.02x of
// mps-prio's and attainment at most 0.2 points below; tight targets
// (<= 1.5x), attainment 15 points above mps-prio's at <= 1.3x its JCT,
// and at most 5 points below MIGER's at <= 0.5x its JCT. The same margins
// are also given on services held.
func (p *report) mapVerdicts(b *bytes.Buffer, w workload) {
	type tally struct {
		n, met int
		missed []string
	}
	var loose, tightReq, tightHeld, miger tally
	add := func(t *tally, ok bool, cell string) {
		t.n++
		if ok {
			t.met++
		} else {
			t.missed = append(t.missed, cell)
		}
	}
	for _, t := range mapTights {
		for _, l := range loads {
			m, o, g := p.mapMean(w, t, l, jobsim.JobMMK), p.mapMean(w, t, l, jobsim.JobMPSPrio), p.mapMean(w, t, l, jobsim.JobMIGER)
			if m.n == 0 || o.n == 0 {
				continue
			}
			cell := fmt.Sprintf("%s at %g", targetText(t), l)
			jr := m.jct / o.jct
			switch {
			case t >= looseFrom:
				add(&loose, jr <= looseJCT && 100*(m.req.Attainment()-o.req.Attainment()) >= -looseSLOPoints, fmt.Sprintf("%s (JCT %.2fx, %s points)", cell, jr, points(m.req.Attainment(), o.req.Attainment())))
			case t <= tightTo:
				add(&tightReq, jr <= tightJCT && 100*(m.req.Attainment()-o.req.Attainment()) >= tightSLOPoints, tightCell(cell, jr, m.req.Attainment(), o.req.Attainment()))
				add(&tightHeld, jr <= tightJCT && 100*(m.heldShare()-o.heldShare()) >= tightSLOPoints, fmt.Sprintf("%s (JCT %.2fx, held %s points)", cell, jr, points(m.heldShare(), o.heldShare())))
				if g.n > 0 {
					add(&miger, m.jct <= migerJCT*g.jct && 100*(m.req.Attainment()-g.req.Attainment()) >= -migerSLOPoints, migerCell(cell, m.jct/g.jct, o.jct/g.jct, m.req.Attainment(), g.req.Attainment(), o.req.Attainment()))
				}
			}
		}
	}
	line := func(what string, t tally) {
		fmt.Fprintf(b, "- %s: met in %d of %d cells", what, t.met, t.n)
		if len(t.missed) > 0 {
			fmt.Fprintf(b, "; missed in %s", strings.Join(t.missed, ", "))
		}
		b.WriteString(".\n")
	}
	b.WriteString("Verdicts (means of the seeds):\n\n")
	line(fmt.Sprintf("loose targets (>= %gx): mmk's JCT <= %.2fx mps-prio's, attainment no more than %.1f points below", looseFrom, looseJCT, looseSLOPoints), loose)
	line(fmt.Sprintf("tight targets (<= %gx): attainment >= mps-prio's + %.0f points at JCT <= %.1fx", tightTo, tightSLOPoints, tightJCT), tightReq)
	line(fmt.Sprintf("tight targets, the same on services held: held >= mps-prio's + %.0f points at JCT <= %.1fx", tightSLOPoints, tightJCT), tightHeld)
	line(fmt.Sprintf("tight targets against MIGER: attainment >= MIGER's - %.0f points at JCT <= %.1fx MIGER's", migerSLOPoints, migerJCT), miger)
	b.WriteString("\n")
}

// migerCell describes a tight-target cell against MIGER: mmk's JCT as a
// multiple of MIGER's (jr) and its gain in points (attainments m and g,
// as fractions), and, where mmk runs past migerJCT of MIGER's JCT, the
// measured reason: where mps-prio, which isolates no service, also does
// (or: its JCT against MIGER's), by how much; where mps-prio is within
// it, what mmk's plan buys for the JCT it costs over mps-prio's
// (attainment o): the points it gains over it at jr/or of its JCT.
func migerCell(cell string, jr, or, m, g, o float64) string {
	why := ""
	switch {
	case or > migerJCT:
		why = fmt.Sprintf("; mps-prio, isolating nothing, runs at %.2fx MIGER's JCT", or)
	case jr > migerJCT:
		why = fmt.Sprintf("; mps-prio, isolating nothing, runs at %.2fx MIGER's JCT, and mmk's plan gains %s points over it at %.2fx its JCT", or, points(m, o), jr/or)
	}
	return fmt.Sprintf("%s (JCT %.2fx MIGER's, %s points%s)", cell, jr, points(m, g), why)
}

// tightCell describes a tight-target cell against mps-prio (attainments
// m and o, as fractions): its JCT ratio and mmk's gain in points, and,
// where mps-prio leaves fewer than tightSLOPoints points to gain, how many
// it leaves: the margin's measured reason.
func tightCell(cell string, jr, m, o float64) string {
	why := ""
	if left := 100 * (1 - o); left < tightSLOPoints {
		why = fmt.Sprintf("; mps-prio keeps %.2f %% in time, so at most %+.1f points are left to gain", 100*o, left)
	}
	return fmt.Sprintf("%s (JCT %.2fx, %s points%s)", cell, jr, points(m, o), why)
}

// mapColors are the map plot's colours by policy.
var mapColors = map[string]string{
	jobsim.JobMPSPrio: "#4e79a7",
	jobsim.JobMIGER:   "#e15759",
	jobsim.JobMISO:    "#b07aa1",
	jobsim.JobMMK:     "#59a14f",
	mmkMIG:            "#f28e2b",
}

// mapPlot draws the winners of each workload's cells as a grid and
// returns the file's name under dir.
func (p *report) mapPlot(dir string, openb bool) (string, error) {
	ws := mapWorkloads(openb)
	const cell, left, top, gap = 56.0, 70.0, 50.0, 40.0
	gw := cell * float64(len(loads))
	width := left + float64(len(ws))*(gw+gap) + 130
	height := top + cell*float64(len(mapTights)) + 60
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="13">Winner per target (p99 = T x alone) and load; seeds 1-%d</text>`+"\n", left, p.seeds)
	for k, w := range ws {
		x0 := left + float64(k)*(gw+gap)
		fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle">%s (%d GPUs)</text>`+"\n", x0+gw/2, top-20, html.EscapeString(w.name), w.gpus)
		for i, t := range mapTights {
			y := top + float64(i)*cell
			if k == 0 {
				fmt.Fprintf(&s, `<text x="%.0f" y="%.1f" text-anchor="end">%gx</text>`+"\n", left-8, y+cell/2+4, t)
			}
			for j, l := range loads {
				win := p.winner(w, t, l)
				c := mapColors[win]
				if c == "" {
					c = "#dddddd"
				}
				fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" fill="%s" stroke="white"><title>%s</title></rect>`+"\n", x0+float64(j)*cell, y, cell, cell, c, html.EscapeString(win))
			}
		}
		for j, l := range loads {
			fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x0+float64(j)*cell+cell/2, top+cell*float64(len(mapTights))+16, l)
		}
		fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle">load</text>`+"\n", x0+gw/2, top+cell*float64(len(mapTights))+34)
	}
	lx := left + float64(len(ws))*(gw+gap)
	for i, pol := range mapPols {
		fmt.Fprintf(&s, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n", lx, top+float64(i)*18, mapColors[pol], lx+18, top+float64(i)*18+10, html.EscapeString(pol))
	}
	s.WriteString("</svg>\n")
	name := "partition-slo-map.svg"
	if math.IsNaN(width) {
		return "", fmt.Errorf("slo map: no size")
	}
	return name, atomicfile.Write(filepath.Join(dir, name), []byte(s.String()))
}
