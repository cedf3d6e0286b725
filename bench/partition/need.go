package main

import (
	"bytes"
	"fmt"

	"github.com/mmkgpu/mmk/sim/jobsim"
)

// needOf is run n of needRuns at load 1 on workload w, its seed aside.
func needOf(w workload, n run) run {
	n.workload, n.gpus, n.load, n.mig = w.name, w.gpus, 1, jobsim.DefaultMIGReconfig
	return n
}

// four is a result's JCT, makespan, STP and SLO attainment: what "better
// on all four" compares.
type four struct{ jct, makespan, stp, slo float64 }

// beats reports whether f is better than o on all four: lower JCT and
// makespan, higher STP and SLO attainment.
func (f four) beats(o four) bool {
	return f.jct < o.jct && f.makespan < o.makespan && f.stp > o.stp && f.slo > o.slo
}

// fourOf is one run's four.
func fourOf(r *jobsim.Result) four { return four{r.AvgJCTS, r.Makespan, r.STP, r.SLOAttainment} }

// four is a setting's four, its means over the seeds.
func (m mean) four() four { return four{m.jct, m.makespan, m.stp, m.req.Attainment()} }

// betterOnAll counts the seeds where x beats base on JCT, makespan, STP
// and SLO attainment at once, and the seeds both ran.
func (p *report) betterOnAll(x, base run) (wins, n int) {
	for s := 1; s <= p.seeds; s++ {
		x.seed, base.seed = uint64(s), uint64(s)
		a, b := p.res[x], p.res[base]
		if a == nil || b == nil {
			continue
		}
		n++
		if fourOf(a).beats(fourOf(b)) {
			wins++
		}
	}
	return wins, n
}

// predictorNeed is mmk against mps-prio as the predictor it decides with
// gets better, up to the ground truth itself (the oracle option): what
// mmk needs from its predictor to beat the strongest simple alternative.
func (p *report) predictorNeed(b *bytes.Buffer) {
	b.WriteString("## What mmk needs from its predictor (load 1)\n\n")
	fmt.Fprintf(b, "mmk decides with its default predictor (gradient boosting) trained on the samples of the geometry's GPU (here mostly H100-80GB: the H100 campaign, which measured MPS client priority but never a service between requests; on A100-80GB the H200 profiles, which saw neither), while the ground truth is H200-measured: against it the predictor is off by the median error in the table. Here Algorithm 1 decides with the ground truth instead (`+%s`, `mmkctl sim jobs --oracle-error E`): it knows each service type's mean request load and the priority jobs run at, and each answer is off by a factor exp(E·z), z standard normal drawn per question, so that E sets the error of a predictor. This is an upper bound, not a policy anyone can run: it tells how good a predictor must be for mmk to beat mps-prio, and the simulator's truth and its oracle share their form, so it flatters the oracle.\n\n", jobsim.OptOracle)
	fmt.Fprintf(b, "%s is Algorithm 1's own greedy placement (the predicted gain decides, no spread), no MIG changes, at most %d jobs per instance (MPS's client limit: no cap); %s is mmkd's placement as it ships (placement.spread and slo_guard on, no cap, MIG left alone). Geometry %s unless the row says A100-80GB. The last column counts the seeds where the row beats mps-prio of the same geometry on JCT, makespan, STP and SLO attainment at once.\n\n", greedy, noCap, jobsim.MMKD, h100Model)
	perWorkload(b, "| policy | geometry | jobs per instance | decides with | predictor error | avg JCT (s) | makespan (s) | STP | SLO attainment | p99 / target | against mps-prio: JCT, makespan, STP | seeds better on all four |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", func(w workload) {
		for _, n := range needRuns {
			x := needOf(w, n)
			base := needOf(w, run{policy: jobsim.JobMPSPrio, gpuModel: n.gpuModel})
			m, o := average(p.seedsLike(x)), average(p.seedsLike(base))
			geo, share, with := p.model.Key, fmt.Sprint(jobsim.DefaultMaxShare), "predictor"
			if n.gpuModel != "" {
				geo = n.gpuModel
			}
			if n.maxShare != 0 {
				share = fmt.Sprint(n.maxShare)
			}
			pol, err := jobsim.ParsePolicy(n.policy)
			if err != nil {
				fmt.Fprintf(b, "| %s | %v |\n", n.policy, err)
				continue
			}
			switch {
			case n.policy == jobsim.JobMPSPrio:
				share, with = fmt.Sprint(noCap), "-"
			case pol.Has(jobsim.OptOracle):
				with = fmt.Sprintf("ground truth, E = %.2f", n.oracleErr)
			}
			vs, wins := "-", "-"
			if n.policy != jobsim.JobMPSPrio {
				vs = fmt.Sprintf("%s, %s, %s", pct(m.jct, o.jct), pct(m.makespan, o.makespan), pct(m.stp, o.stp))
				k, of := p.betterOnAll(x, base)
				wins = fmt.Sprintf("%d of %d", k, of)
			}
			errs := "-"
			if n.policy != jobsim.JobMPSPrio {
				errs = fmt.Sprintf("%.1f %%", 100*m.predErr)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s |\n", n.policy, geo, share, with, errs, m.jct, m.makespan, m.stp, slo(m), p99(m.req.Quantile(0.99)), vs, wins)
		}
	})
}

// predictorWhy is the reason the section on the predictor measures: the
// predictor's error against the ground truth, and what the same placement
// does with the truth itself.
func (p *report) predictorWhy(b *bytes.Buffer, w workload) {
	base := needOf(w, run{policy: jobsim.JobMPSPrio, gpuModel: h100Model})
	est := average(p.seedsLike(needOf(w, run{policy: greedy, maxShare: noCap, gpuModel: h100Model})))
	prio := average(p.seedsLike(base))
	fmt.Fprintf(b, "- **%s, the predictor.** On %s geometry, Algorithm 1's greedy placement without a cap or MIG changes (%s) has JCT %.0f s, STP %.2f and SLO %s with mmk's predictor, whose median error against the ground truth is %.1f %% (mps-prio: %.0f s, %.2f, %s).", w.name, h100Model, greedy, est.jct, est.stp, slo(est), 100*est.predErr, prio.jct, prio.stp, slo(prio))
	for _, e := range oracleErrs {
		x := needOf(w, run{policy: greedy + "+" + jobsim.OptOracle, maxShare: noCap, gpuModel: h100Model, oracleErr: e})
		m := average(p.seedsLike(x))
		k, n := p.betterOnAll(x, base)
		fmt.Fprintf(b, " Deciding with the ground truth at error %.2f (median %.1f %%): %.0f s, %.2f, %s, better than mps-prio on all four in %d of %d seeds.", e, 100*m.predErr, m.jct, m.stp, slo(m), k, n)
	}
	greedyTruth := needOf(w, run{policy: greedy + "+" + jobsim.OptOracle, maxShare: noCap, gpuModel: h100Model})
	mmkTruth := needOf(w, run{policy: jobsim.JobMMK + "+" + jobsim.OptOracle, gpuModel: h100Model})
	g, m := p.beatsOnMeans(greedyTruth, base), p.beatsOnMeans(mmkTruth, base)
	mt := average(p.seedsLike(mmkTruth))
	switch {
	case g && m:
		b.WriteString(" With the ground truth both the greedy placement and mmk as it runs beat mps-prio on the means of all four: what mmk lacks against mps-prio is its predictor.\n")
	case g:
		fmt.Fprintf(b, " With the ground truth, mmk as it runs (spread, the slo guard: %s+%s) still does not beat mps-prio on the means of all four (JCT %s); the greedy placement does: what mmk gives up for its guard and spread is there.\n", jobsim.JobMMK, jobsim.OptOracle, pct(mt.jct, prio.jct))
	default:
		b.WriteString(" Even with the ground truth, Algorithm 1 does not beat mps-prio on the means of all four: its predictor is not all it lacks.\n")
	}
}

// beatsOnMeans reports whether x's means beat base's on JCT, makespan,
// STP and SLO attainment.
func (p *report) beatsOnMeans(x, base run) bool {
	return average(p.seedsLike(x)).four().beats(average(p.seedsLike(base)).four())
}
