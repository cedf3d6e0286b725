package main

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
	"github.com/mmkgpu/mmk/trace"
)

// mmkdPolicy is mmkd's placement as it ran in the replayed runs, as the
// simulator names it: mmk without the SLO guard (placement.slo_guard came
// after them), without a cap on jobs per instance (phases' sim).
const mmkdPolicy = jobsim.MMKD + "-" + jobsim.OptSLO

// outcome is what a phase gave: the services' requests served within
// target, the trainers' mean JCT and the makespan, all from the phase's
// start.
type outcome struct {
	slo, batchJCT, makespan float64
	// run is the trainers' mean time from their first timed iteration
	// to their end: their JCT without start-up.
	run float64
}

// replayCase is one round's phase of a JOBSET=sim run as the simulator's
// jobs: each arrives at the phase's start; a trainer brings its
// iterations at its alone speed, a service its serving time and its load
// (its request rate times the GPU time a request took alone).
func replayCase(phase []line, alone aloneRuns) ([]trace.SimJob, error) {
	var jobs []trace.SimJob
	for _, l := range phase {
		a, err := alone.of(l)
		if err != nil {
			return nil, err
		}
		jt, ok := trace.LookupJobType(l.Report.Job)
		if !ok {
			return nil, fmt.Errorf("%s: unknown job type %q", l.Name, l.Report.Job)
		}
		j := trace.SimJob{ID: l.Name, Type: jt.Name, Online: jt.Online, MemoryMiB: jt.MemoryMiB}
		switch {
		case l.Kind == "online" && l.Report.Rate > 0 && a.Report.ServiceMs > 0:
			j.Load = math.Min(1, l.Report.Rate*a.Report.ServiceMs/1000)
			j.Work = time.Duration((l.Report.TEnd - l.Report.TStart) * float64(time.Second))
		case l.Kind == "offline" && l.Report.Iters > 0 && a.Report.ItPerS > 0:
			j.Work = time.Duration(float64(l.Report.Iters) / a.Report.ItPerS * float64(time.Second))
		default:
			return nil, fmt.Errorf("%s in %s: not an open-loop service with its alone service time nor a trainer with its alone speed (JOBSET=sim)", l.Name, l.Phase)
		}
		if j.Online != (l.Kind == "online") {
			return nil, fmt.Errorf("%s: kind %s, but %s is online %v", l.Name, l.Kind, jt.Name, jt.Online)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// measured is a phase's outcome on the GPU: a request in time within
// slo x the service's alone time per request, JCTs from the phase's start.
func measured(phase []line, alone aloneRuns, sloFactor float64) outcome {
	var met, n, jct, run, trainers, end float64
	for _, l := range phase {
		end = math.Max(end, l.Report.TEnd-l.T0)
		if l.Kind == "online" {
			target := sloFactor * alone[l.Round][l.Name].Report.ServiceMs
			for _, v := range l.Report.LatMs {
				n++
				if v <= target {
					met++
				}
			}
			continue
		}
		jct += l.Report.TEnd - l.T0
		run += l.Report.TEnd - l.Report.TStart
		trainers++
	}
	o := outcome{makespan: end}
	if n > 0 {
		o.slo = met / n
	}
	if trainers > 0 {
		o.batchJCT, o.run = jct/trainers, run/trainers
	}
	return o
}

// replay writes the simulator's replay of a JOBSET=sim run against what
// the GPU measured, phase by phase and round by round.
func replay(b *bytes.Buffer, path string, lines []line, models *jobsim.Models, model *partitioner.Model) error {
	byPhase := map[phaseKey][]line{}
	for _, l := range lines {
		byPhase[phaseKey{l.Round, l.Phase}] = append(byPhase[phaseKey{l.Round, l.Phase}], l)
	}
	alone := aloneRunsOf(lines).medians()
	fmt.Fprintf(b, "## The simulator replaying a real run of the same case\n\n`%s`: each phase of each round replayed by `jobsim.Simulate` on one %s (every job arriving at the phase's start; a trainer's work is its iterations at its alone speed, a service's load its request rate times its GPU time per request alone, its target %.1f x that time; alone: the median over the rounds, since the alone phase is the noisiest of a round). The simulator's services draw their own Poisson requests; its start-ups are its job types' (not the measured ones), so JCTs differ by those; the trainers' time on the GPU leaves them out (measured: from the first timed iteration to the end; simulated: the mean JCT less the types' mean start-up, every job starting at once).\n\n", path, model.Key, jobsim.DefaultSLOFactor)
	b.WriteString("| round | phase | simulated as | SLO attainment: measured / simulated | trainers' mean time on the GPU s: measured / simulated | trainers' mean JCT s: measured / simulated | makespan s: measured / simulated |\n|---|---|---|---|---|---|---|\n")
	gaps := map[string][]gap{}
	for _, round := range slices.Sorted(maps.Keys(alone)) {
		for _, ph := range phases {
			k := phaseKey{round, ph.name}
			if len(byPhase[k]) == 0 {
				continue
			}
			g, err := replayRow(b, byPhase[k], alone, round, ph.name, ph.sim, models, model)
			if err != nil {
				return err
			}
			gaps[ph.name] = append(gaps[ph.name], g)
		}
	}
	b.WriteString("\nThe simulator against the GPU, per phase: the mean over the rounds of simulated / measured - 1 (above 0: the simulator is slower than the GPU was), and of the SLO attainment's difference in points (above 0: the simulator serves more in time).\n\n| phase | rounds | SLO attainment | trainers' time on the GPU | trainers' JCT | makespan |\n|---|---|---|---|---|---|\n")
	for _, ph := range phases {
		gs := gaps[ph.name]
		if len(gs) == 0 {
			continue
		}
		var m gap
		for _, g := range gs {
			m.slo += g.slo / float64(len(gs))
			m.run += g.run / float64(len(gs))
			m.jct += g.jct / float64(len(gs))
			m.makespan += g.makespan / float64(len(gs))
		}
		fmt.Fprintf(b, "| %s (%s) | %d | %+.1f points | %+.0f %% | %+.0f %% | %+.0f %% |\n", ph.name, ph.what, len(gs), 100*m.slo, 100*m.run, 100*m.jct, 100*m.makespan)
	}
	b.WriteString("\n")
	return tight(b, byPhase, lines, alone, models, model)
}

// phaseKey is one phase of one round.
type phaseKey struct {
	round int
	phase string
}

// gap is how far one replayed phase is from what the GPU measured: the
// SLO attainment's difference (simulated - measured) and the relative
// errors (simulated / measured - 1) of the trainers' time on the GPU,
// their JCT and the makespan.
type gap struct{ slo, run, jct, makespan float64 }

// replayRow writes one phase of one round, replayed by the simulator's
// policy pol and measured.
func replayRow(b *bytes.Buffer, phase []line, alone aloneRuns, round int, name, pol string, models *jobsim.Models, model *partitioner.Model) (gap, error) {
	jobs, err := replayCase(phase, alone)
	if err != nil {
		return gap{}, fmt.Errorf("round %d %s: %w", round, name, err)
	}
	cfg := jobsim.Config{Jobs: jobs, Model: model, GPUs: 1, Policy: pol, Truth: models.Truth, Est: models.Est, Effects: models.Effects, Costs: jobsim.Costs{Checkpoint: models.Restart.Types}, Seed: uint64(round + 1)}
	if pol == mmkdPolicy {
		cfg.MaxShare = jobsim.MaxMPSClients
	}
	r, err := jobsim.Simulate(cfg)
	if err != nil {
		return gap{}, fmt.Errorf("round %d %s: %w", round, name, err)
	}
	m := measured(phase, alone, jobsim.DefaultSLOFactor)
	startup, trainers := 0.0, 0.0
	for _, j := range jobs {
		if !j.Online {
			jt, _ := trace.LookupJobType(j.Type)
			startup += jt.Startup.Seconds()
			trainers++
		}
	}
	if trainers > 0 {
		startup /= trainers
	}
	simRun := r.BatchJCTS - startup
	fmt.Fprintf(b, "| %d | %s | %s | %.2f %% / %.2f %% | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |\n", round, name, pol, 100*m.slo, 100*r.SLOAttainment, m.run, simRun, m.batchJCT, r.BatchJCTS, m.makespan, r.Makespan)
	return gap{slo: r.SLOAttainment - m.slo, run: rel(simRun, m.run), jct: rel(r.BatchJCTS, m.batchJCT), makespan: rel(r.Makespan, m.makespan)}, nil
}

// rel is got / want - 1, 0 where want is 0.
func rel(got, want float64) float64 {
	if want == 0 {
		return 0
	}
	return got/want - 1
}
