package main

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/mmkgpu/mmk/internal/stats"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
	"github.com/mmkgpu/mmk/slo"
)

// tightFactors are the ratio targets (p99 within F x the service's p99
// alone) the tight-target check counts requests against.
var tightFactors = []float64{1.25, 1.5, 2, 3.5}

// svcCheck is one service in one phase, summed over rounds: its latency
// at p50 and p99 over alone, and its share of requests within each of
// tightFactors times its p99 alone, measured and simulated.
type svcCheck struct {
	rounds   int
	p50, p99 [2]float64 // measured, simulated: sums over rounds
	within   [][2]float64
}

// tight writes how far the simulator is from the GPU where targets are
// tight: each service's latency over its own latency alone (p50, p99)
// and the share of its requests within 1.25-3.5 times its p99 alone, per
// phase, measured and simulated. The measured alone latencies pool the
// alone phases of all rounds (one round's p99 rests on few requests); the
// simulator's are its own requests alone (jobsim's ratio targets).
func tight(b *bytes.Buffer, byPhase map[phaseKey][]line, lines []line, alone aloneRuns, models *jobsim.Models, model *partitioner.Model) error {
	pooled := map[string][]float64{}
	for _, l := range lines {
		if l.Phase == "alone" && l.Kind == "online" {
			pooled[l.Name] = append(pooled[l.Name], l.Report.LatMs...)
		}
	}
	b.WriteString("### Where targets are tight\n\n")
	fmt.Fprintf(b, "Each service's latency at p50 and p99 over its own at the same percentile alone, and the share of its requests within F times its p99 alone (F = %v: the objectives `p99=Fx` as mmkd takes them), measured / simulated, means over the rounds. Measured alone: the alone phases of all rounds pooled; simulated alone: the simulator's own requests on the whole GPU with nothing else.\n\n", tightFactors)
	b.WriteString("| phase | service | rounds | p50 over alone | p99 over alone |")
	for _, f := range tightFactors {
		fmt.Fprintf(b, " within %gx |", f)
	}
	b.WriteString("\n|---|---|---|---|---|")
	for range tightFactors {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, ph := range phases {
		checks := map[string]*svcCheck{}
		for _, round := range slices.Sorted(maps.Keys(alone)) {
			phase := byPhase[phaseKey{round, ph.name}]
			if len(phase) == 0 {
				continue
			}
			if err := tightRound(checks, phase, pooled, alone, round, ph.sim, models, model); err != nil {
				return fmt.Errorf("round %d %s: %w", round, ph.name, err)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(checks)) {
			c := checks[name]
			n := float64(c.rounds)
			fmt.Fprintf(b, "| %s | %s | %d | %.2f / %.2f | %.2f / %.2f |", ph.name, name, c.rounds, c.p50[0]/n, c.p50[1]/n, c.p99[0]/n, c.p99[1]/n)
			for _, w := range c.within {
				fmt.Fprintf(b, " %.1f %% / %.1f %% |", 100*w[0]/n, 100*w[1]/n)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	return nil
}

// tightRound adds one round of one phase to checks: the measured
// latencies against the pooled alone ones, and the simulator's replay of
// the phase at each of tightFactors.
func tightRound(checks map[string]*svcCheck, phase []line, pooled map[string][]float64, alone aloneRuns, round int, pol string, models *jobsim.Models, model *partitioner.Model) error {
	jobs, err := replayCase(phase, alone)
	if err != nil {
		return err
	}
	sims := make([]*jobsim.Result, len(tightFactors))
	for k, f := range tightFactors {
		for i := range jobs {
			if jobs[i].Online {
				jobs[i].SLO = slo.Target{Percentile: 99, Ratio: f}
			}
		}
		cfg := jobsim.Config{Jobs: jobs, Model: model, GPUs: 1, Policy: pol, Truth: models.Truth, Est: models.Est, Effects: models.Effects, Costs: jobsim.Costs{Checkpoint: models.Restart.Types}, Seed: uint64(round + 1)}
		if pol == mmkdPolicy {
			cfg.MaxShare = jobsim.MaxMPSClients
		}
		if sims[k], err = jobsim.Simulate(cfg); err != nil {
			return err
		}
	}
	for _, l := range phase {
		if l.Kind != "online" || len(l.Report.LatMs) == 0 || len(pooled[l.Name]) == 0 {
			continue
		}
		c := checks[l.Name]
		if c == nil {
			c = &svcCheck{within: make([][2]float64, len(tightFactors))}
			checks[l.Name] = c
		}
		a50, a99 := stats.Quantile(pooled[l.Name], 0.5), stats.Quantile(pooled[l.Name], 0.99)
		c.rounds++
		c.p50[0] += stats.Quantile(l.Report.LatMs, 0.5) / a50
		c.p99[0] += stats.Quantile(l.Report.LatMs, 0.99) / a99
		for k, f := range tightFactors {
			in := 0
			for _, v := range l.Report.LatMs {
				if v <= f*a99 {
					in++
				}
			}
			c.within[k][0] += float64(in) / float64(len(l.Report.LatMs))
			s, ok := serviceOf(sims[k], l.Name)
			if !ok {
				return fmt.Errorf("%s: the simulator served none of its requests", l.Name)
			}
			c.within[k][1] += s.Attainment
			if k == 0 {
				c.p50[1] += s.P50
				c.p99[1] += s.P99
			}
		}
	}
	return nil
}

// serviceOf finds a service's outcome in a result.
func serviceOf(r *jobsim.Result, id string) (jobsim.ServiceResult, bool) {
	k := slices.IndexFunc(r.PerService, func(s jobsim.ServiceResult) bool { return s.ID == id })
	if k < 0 {
		return jobsim.ServiceResult{}, false
	}
	return r.PerService[k], true
}
