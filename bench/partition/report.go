package main

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// report writes the sections of docs/results/partition.md.
type report struct {
	res    map[run]*jobsim.Result
	seeds  int
	models *jobsim.Models
	model  *partitioner.Model
	// spans is each workload's mean time over which its jobs arrive at
	// load 1 (runner.meanSpan).
	spans map[string]float64
}

// mean is one setting's results averaged over the seeds; requests are
// pooled, so attainment and p99 are over all of them.
type mean struct {
	n                                        int
	jct, batch, makespan, stp, wait, jobsGPU float64
	restarts, reconfigs, predErr             float64
	unfinished                               int
	req                                      jobsim.RequestStats
	// services and held sum the services with requests and those whose
	// target held, over the seeds.
	services, held int
}

// heldShare is the share of services whose target held.
func (m mean) heldShare() float64 {
	if m.services == 0 {
		return 1
	}
	return float64(m.held) / float64(m.services)
}

func average(rs []*jobsim.Result) mean {
	var m mean
	for _, r := range rs {
		m.n++
		m.jct += r.AvgJCTS
		m.batch += r.BatchJCTS
		m.makespan += r.Makespan
		m.stp += r.STP
		m.wait += r.WaitS
		m.jobsGPU += r.JobsPerGPU
		m.restarts += float64(r.Restarts)
		m.reconfigs += float64(r.Reconfigs)
		m.predErr += r.PredictionError
		m.unfinished += r.Unfinished
		m.req.Merge(r.Requests)
		m.services += r.Services
		m.held += r.ServicesMet
	}
	if m.n > 0 {
		k := float64(m.n)
		m.jct /= k
		m.batch /= k
		m.makespan /= k
		m.stp /= k
		m.wait /= k
		m.jobsGPU /= k
		m.restarts /= k
		m.reconfigs /= k
		m.predErr /= k
	}
	return m
}

func (p *report) mean(w workload, load float64, policy string, mig time.Duration) mean {
	return average(p.seedsOf(w, load, policy, mig))
}

// at1 is a policy's mean at load 1 with the default MIG change cost.
func (p *report) at1(w workload, policy string) mean {
	return p.mean(w, 1, policy, jobsim.DefaultMIGReconfig)
}

// pct is a's change against b.
func pct(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.0f %%", 100*(a/b-1))
}

// share is a out of n in percent.
func share(a, n float64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f %%", 100*a/n)
}

func p99(v float64) string {
	if math.IsInf(v, 1) {
		return "lost"
	}
	return fmt.Sprintf("%.2f", v)
}

func slo(m mean) string { return share(m.req.Met, m.req.Requests) }

func (p *report) method(b *bytes.Buffer) {
	f := p.models.Fit
	rc := p.models.Restart
	ckpt := "**not measured yet**: the table `sim/jobsim/data/restart-cost.json` is empty, so saves and restores take no time here; derive it from the H100 lines with `make restart-costs` once `docs/results/restart-cost-h100/ckpt.jsonl` is in"
	if rc.Source != "" {
		ckpt = fmt.Sprintf("per job type from `%s` (%s; medians of the repetitions, `sim/jobsim/data/restart-cost.json`, derived by `make restart-costs`)", rc.Source, rc.GPU)
	}
	full := p.model.Profiles[len(p.model.Profiles)-1]
	b.WriteString("## Method\n\n")
	fmt.Fprintf(b, "- **Simulator:** `jobsim.Simulate`, event driven, on GPUs of the A100-80GB geometry (the whole GPU in MIG mode is a %s of %d of its %d SMs).\n", full.Name, full.SMs, p.model.SMs)
	b.WriteString("  Algorithm 1's policies call the real `partitioner.Decide` (or `DecideGated`) at every arrival and completion; MIGER and MISO call `partitioner/baselines`, written from their code (each rule cites its file).\n")
	sf := p.models.Slices
	fmt.Fprintf(b, "- **Ground truth:** `jobsim.SpeedModel`, built from the 620 measured H200 samples, a different model from the predictor the policies decide with (mmk's default, gradient boosting, trained on `%s` for this geometry; on H100 geometry on the H100 campaign).\n", p.models.EstData)
	fmt.Fprintf(b, "  - Alone, the measured speed curve at 10..100 %%. A MIG slice has its share of the L2 and memory system as well as of the SMs, so it runs below an MPS share of as many SMs: the geometric blend of that share's speed (weight %.2f) and the whole GPU's scaled to the slice's SMs, fitted to %d published runs of jobs alone in A100 slices (mean error %.1f %%, against %.1f %% taking a slice as an MPS share; the predictor applies the same form, its own weight fitted: [simcheck-h100.md](simcheck-h100.md), MIG slices). With MIG mode off (mmk, mmkd without mig.manage) a GPU has all its SMs.\n", sf.W, sf.Runs, 100*sf.MeanError, 100*sf.MPSShareError)
	fmt.Fprintf(b, "  - Shares summing to S above an instance's capacity C run as at p·(C/S)^β, β = %.2f, fitted so that the %d measured runs with shares above 100 %% are predicted without bias (%+.1f %%; before this term, +10.9 %%).\n", f.Beta, f.Over, 100*f.OverBias)
	b.WriteString("  - A co-runner counts with its busy share (a service between requests takes no SMs); under MPS client priority (online 0, offline 1) offline jobs take no SMs from online ones, and online ones take first the warp slots they occupy alone (their SM occupancy at their share), not their whole share.\n")
	b.WriteString("  - Memory interference: divided by 1 + a·(co-runners' DRAM use, each at the share it effectively gets), a fitted per job type; priority does not remove it.\n")
	fmt.Fprintf(b, "  - Mean relative error on the 480 measured co-located runs: %.1f %%.\n", 100*f.MeanError)
	b.WriteString("  - **Checked against real H100 runs** ([simcheck-h100.md](simcheck-h100.md), `make results-simcheck`): on the H100 campaign's pairs and triples, within what it was fitted on, it tracks what co-runners and priority did (its table there); replaying a real run of six jobs on one H100 (three batch-32 services with Poisson requests, three trainers, `JOBSET=sim`), it serves about as many requests in time as the GPU did under MPS with priority and runs the trainers slower than they ran (its table there: the SLO attainment, the trainers' time and the makespan per phase); on mmkd's earlier rounds with services at batch 1 (outside its data) it is far slower than the GPU. No real run of a whole workload (many GPUs, arrivals over hours) has checked the numbers below.\n")
	b.WriteString("- **Online jobs are services.** Requests arrive (Poisson) from the time a service is first up, for its lifetime, at a load of 5-25 % of a whole GPU (openb: a quarter of its GPU share); each takes its type's measured latency alone (batch 32) divided by the service's speed, first come first served.\n")
	fmt.Fprintf(b, "  A service's latency target (SLO) is, in the map, `p99=Tx` as mmkd takes it: 99 %% of its requests within T times its p99 alone (its own requests through the whole GPU with nothing else); elsewhere, as before, 99 %% within %.1f x one request alone (MIGER's resnet50 target: 50 ms against 14.5 ms alone). SLO attainment is the share of all requests served within target, services held the share whose target held; p99 is the 99th percentile of latency over target (\"lost\": lost requests reach it). A service's JCT runs from its arrival to its last request served.\n", jobsim.DefaultSLOFactor)
	b.WriteString("- **Costs:** a start costs the job type's measured start-up (7-14 s, `docs/results/job-footprint-h200.jsonl`). A restart stops the job: an offline job saves its checkpoint, starts and restores it, keeping its progress; a service loses the requests it holds and starts again (its model's restore included) while new requests wait.\n")
	fmt.Fprintf(b, "  Checkpoint save and restore: %s. A MIG change stops the instances it touches for %.0f s (assumed; 30 and 60 s below).\n", ckpt, jobsim.DefaultMIGReconfig.Seconds())
	b.WriteString("- **Workloads:** testbed (40 online + 20 offline MMK Table III jobs on 2 GPUs) and large (800 + 400 on 8); services live 1-5 min, training takes 2-15 min alone; arrivals are Poisson at a stated **load**, the GPU work offered per second over the GPUs' capacity (an offline job brings its work alone on the whole GPU, a service its lifetime times its load).\n")
	b.WriteString("- **Policies:**\n")
	b.WriteString("  - mps-prio: mps with MPS client priority set by hand (online jobs at 0, offline at 1: `CUDA_MPS_CLIENT_PRIORITY=1` for the trainers), **the strongest simple alternative a user could pick**: on the H100 it kept the online job near its latency alone with the trainer at 95 % (docs/results/pareto-h100.md, docs/results/mmkd-e2e-h100.md).\n")
	fmt.Fprintf(b, "  - default: time slicing; mps: MPS without limits (both first come first served, backfilling by memory, no MIG: all %d SMs); mps-mig: mps inside the whole-GPU MIG instance.\n", p.model.SMs)
	b.WriteString("  - miso: MISO as published (one job per slice, the layout of least mean slowdown, strict FIFO, a 30 s MPS phase with checkpoints on each arrival that joins running jobs).\n")
	b.WriteString("  - miso-greedy: Algorithm 1 with one job per instance, first come first served (the \"MISO-like\" policy before issue 21).\n")
	b.WriteString("  - miger: MIGER as published (services in the smallest slice meeting their target, one offline job beside a service at <= 0.7 of target, <= 4 jobs per GPU, the least-loaded GPU, the queue's head retried every 35 s).\n")
	b.WriteString("  - alg1-unprotected: Algorithm 1 without MMK's protections (MIG changed under online jobs, online shares re-shared: the \"MIGER-like\" policy before issue 21).\n")
	b.WriteString("  - alg1: Algorithm 1 with MMK's protections (online shares kept, MIG left alone under online jobs) and MPSConfig handing out slivers (the simulator's \"mmk-alg1\" before issue 21).\n")
	fmt.Fprintf(b, "  - mmk: alg1 + %s (each defined in the ablation below): MIG mode off, the SLO guard, arrival order: mmkd's defaults (%s), but that mmkd derives a service's need from its target alone, the simulator from its target and request load.\n", strings.Join(jobsim.MMKOptions, ", "), jobsim.MMKD)
	fmt.Fprintf(b, "  Algorithm 1 caps no instance's jobs but at MPS's %d clients (mmkd's default; the section on caps tries 2, 3 and 4).\n\n", jobsim.DefaultMaxShare)
}

// acceptance is the goal at load 1: mmk against the published
// MIGER (the MMK paper's margins), against MISO and against the
// strongest simple alternative, mps-prio (better on all four).
func (p *report) acceptance(b *bytes.Buffer) {
	b.WriteString("## Acceptance at load 1\n\n")
	b.WriteString("mmk against each baseline, means over the seeds. The goal: the MMK paper's margins against MIGER (JCT <= -28 %, makespan <= -32 %, STP >= +35 %) with SLO attainment >= 99 %, and better than MISO on all four. The strongest simple alternative is **mps-prio** (MPS with the trainers' client priority set by hand); a policy counts only where it beats it, so it is held to the same rule as MISO.\n\n")
	b.WriteString("| workload | against | JCT | makespan | STP | mmk's SLO attainment | the baseline's | verdict |\n|---|---|---|---|---|---|---|---|\n")
	for _, w := range workloads {
		m := p.at1(w, jobsim.JobMMK)
		for _, base := range []string{jobsim.JobMIGER, jobsim.JobMISO, jobsim.JobMPSPrio} {
			o := p.at1(w, base)
			jct, mk, stp := 100*(m.jct/o.jct-1), 100*(m.makespan/o.makespan-1), 100*(m.stp/o.stp-1)
			var missed []string
			sloOK := m.req.Attainment() >= 0.99
			if base == jobsim.JobMIGER {
				if jct > -28 {
					missed = append(missed, "JCT")
				}
				if mk > -32 {
					missed = append(missed, "makespan")
				}
				if stp < 35 {
					missed = append(missed, "STP")
				}
			} else {
				if jct >= 0 {
					missed = append(missed, "JCT")
				}
				if mk >= 0 {
					missed = append(missed, "makespan")
				}
				if stp <= 0 {
					missed = append(missed, "STP")
				}
				sloOK = sloOK && m.req.Attainment() > o.req.Attainment()
			}
			if !sloOK {
				missed = append(missed, "SLO")
			}
			verdict := "met"
			if len(missed) > 0 {
				verdict = "missed: " + strings.Join(missed, ", ")
			}
			fmt.Fprintf(b, "| %s | %s | %+.0f %% | %+.0f %% | %+.0f %% | %s | %s | %s |\n", w.name, base, jct, mk, stp, slo(m), slo(o), verdict)
		}
	}
	b.WriteString("\nWhere a margin is missed, the section \"Why\" at the end gives the measured reason.\n\n")
}

const policyHeader = "| policy | avg JCT (s) | batch JCT (s) | makespan (s) | STP | SLO attainment | p99 / target | wait (s) | restarts | MIG changes | jobs / GPU | predictor error |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func policyRow(b *bytes.Buffer, name string, m mean) {
	unf := ""
	if m.unfinished > 0 {
		unf = fmt.Sprintf(" (%d unfinished)", m.unfinished)
	}
	fmt.Fprintf(b, "| %s%s | %.0f | %.0f | %.0f | %.2f | %s | %s | %.0f | %.0f | %.0f | %.1f | %.1f %% |\n", name, unf, m.jct, m.batch, m.makespan, m.stp, slo(m), p99(m.req.Quantile(0.99)), m.wait, m.restarts, m.reconfigs, m.jobsGPU, 100*m.predErr)
}

func (p *report) mainTable(b *bytes.Buffer, w workload, svg string) {
	fmt.Fprintf(b, "## %s on %d x %s, load 1\n\n", w.name, w.gpus, p.model.Key)
	b.WriteString("Wait is from arrival to first start; the predictor error is the median relative error of the speeds the policy decided with against the ground truth's.\n\n")
	b.WriteString(policyHeader)
	for _, pol := range jobsim.Policies() {
		policyRow(b, pol, p.at1(w, pol))
	}
	m := p.at1(w, jobsim.JobMMK)
	g := p.at1(w, jobsim.JobMIGER)
	fmt.Fprintf(b, "\nmmk against MIGER: JCT %s, makespan %s, STP %s; the MMK paper: JCT %+.0f %%, makespan %+.0f %%, STP %+.0f %%.\n\n", pct(m.jct, g.jct), pct(m.makespan, g.makespan), pct(m.stp, g.stp), w.paper[0], w.paper[1], w.paper[2])
	fmt.Fprintf(b, "![JCT CDF](%s)\n\n", svg)
}

func (p *report) ablation(b *bytes.Buffer) {
	b.WriteString("## Ablation: what each named option is worth (load 1)\n\n")
	b.WriteString("Algorithm 1 with MMK's protections (alg1), each option added alone, mmk, and mmk with each of its options taken away. The options (`partitioner.Options`, `jobsim.Options`):\n\n")
	b.WriteString("- full-demand: MPSConfig as the paper writes it (lines 28-32): a job gets its whole demand or does not go in.\n")
	b.WriteString("- online-reclaim: a running online job below its demand takes it back when its instance is shared anew.\n")
	b.WriteString("- mig-keep-online: MIG changes where online jobs run, keeping each online job's instance and share.\n")
	b.WriteString("- online-first: pending online jobs are placed before offline ones.\n")
	b.WriteString("- priority: MPS client priority (online 0, offline 1), every new job at 100 %, shares summing above 100 % (mmkd's default where MPS runs); MPSConfig, and so full-demand and online-reclaim, no longer apply.\n")
	fmt.Fprintf(b, "- slo: a job goes into an instance only where every service there keeps the predictor's speed for it, next to the other services (each at its share times its request load) and, under priority, not counting offline jobs, at or above its need: the least speed at which, as an M/D/1 queue, it holds its target with %.2fx to spare for the memory interference priority leaves (measured next to trainers at priority 1 on the H100: 1.09-1.10x, docs/results/mmkd-e2e-h100.md), at most its speed on the whole GPU.\n", jobsim.DefaultSLOHeadroom)
	b.WriteString("- gate: the restart gate (`partitioner.DecideGated`): a restart only where its predicted gain over the job's run so far beats its save, start-up and restore.\n")
	b.WriteString("- kernel: the kernel scheduler's effect measured in the kernel-level simulator (`sim/jobsim/data/kernel-effects.json`), against plain MPS without priority.\n")
	b.WriteString("- fixed-mig: MIG mode off, layouts never change (mmkd's default, mig.manage off): every GPU whole, all its SMs.\n")
	b.WriteString("- spread: each job into the least busy instance (a trainer counts 1, a service its request load), the predicted gain breaking ties (Algorithm 1 alone puts a job where the predicted total gains most).\n")
	b.WriteString("- arrival-order: waiting jobs placed first come, first served, later ones filling in, instead of largest memory first (Algorithm 1's line 1, which keeps a small job behind every later large one).\n")
	b.WriteString("- oracle: Algorithm 1 decides with the ground truth instead of the predictor: an upper bound, not a policy (the section on the predictor).\n\n")
	perWorkload(b, policyHeader, func(w workload) {
		for _, pol := range ablation() {
			policyRow(b, pol, p.at1(w, pol))
		}
	})
}

// perWorkload writes a table per workload: its header, then its rows.
func perWorkload(b *bytes.Buffer, header string, rows func(w workload)) {
	for _, w := range workloads {
		fmt.Fprintf(b, "### %s\n\n", w.name)
		b.WriteString(header)
		rows(w)
		b.WriteString("\n")
	}
}

func (p *report) sweep(b *bytes.Buffer) {
	b.WriteString("## Load sweep\n\n")
	b.WriteString("The same workloads offered 0.5 to 1.5 times the GPUs' capacity, and mmk's change against each policy.\n\n")
	perWorkload(b, "| load | policy | avg JCT (s) | makespan (s) | STP | SLO attainment | p99 / target | mmk against it: JCT, makespan, STP |\n|---|---|---|---|---|---|---|---|\n", func(w workload) {
		for _, l := range loads {
			m := p.mean(w, l, jobsim.JobMMK, jobsim.DefaultMIGReconfig)
			for _, pol := range sweepPols {
				x := p.mean(w, l, pol, jobsim.DefaultMIGReconfig)
				vs := "-"
				if pol != jobsim.JobMMK {
					vs = fmt.Sprintf("%s, %s, %s", pct(m.jct, x.jct), pct(m.makespan, x.makespan), pct(m.stp, x.stp))
				}
				fmt.Fprintf(b, "| %.2f | %s | %.0f | %.0f | %.2f | %s | %s | %s |\n", l, pol, x.jct, x.makespan, x.stp, slo(x), p99(x.req.Quantile(0.99)), vs)
			}
		}
	})
}

func (p *report) costs(b *bytes.Buffer) {
	b.WriteString("## What a MIG change costs\n\n")
	b.WriteString("The time a MIG change stops the instances it touches is not measured (MIG may not be changed on the lent GPUs): the same runs at load 1 with 5, 30 and 60 s.\n\n")
	perWorkload(b, "| MIG change | policy | avg JCT (s) | makespan (s) | STP | SLO attainment | MIG changes | restarts |\n|---|---|---|---|---|---|---|---|\n", func(w workload) {
		for _, c := range migCosts {
			for _, pol := range costPols {
				x := p.mean(w, 1, pol, c)
				fmt.Fprintf(b, "| %.0f s | %s | %.0f | %.0f | %.2f | %s | %.0f | %.0f |\n", c.Seconds(), pol, x.jct, x.makespan, x.stp, slo(x), x.reconfigs, x.restarts)
			}
		}
	})
}

// caps is mmk with each cap on jobs per instance beside mps-prio: what
// SLO attainment costs in JCT.
func (p *report) caps(b *bytes.Buffer) {
	b.WriteString("## mmk's cap on jobs per instance (load 1)\n\n")
	fmt.Fprintf(b, "Algorithm 1 packs at most this many jobs into an instance (default %d, `mmkctl sim jobs --max-share`); mps-prio has no cap (48 MPS clients) and places by free memory.\n\n", jobsim.DefaultMaxShare)
	perWorkload(b, "| policy | jobs per instance | avg JCT (s) | batch JCT (s) | makespan (s) | STP | SLO attainment | p99 / target | wait (s) |\n|---|---|---|---|---|---|---|---|---|\n", func(w workload) {
		row := func(name, limit string, m mean) {
			fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %.0f | %.2f | %s | %s | %.0f |\n", name, limit, m.jct, m.batch, m.makespan, m.stp, slo(m), p99(m.req.Quantile(0.99)), m.wait)
		}
		row(jobsim.JobMPSPrio, "48", p.at1(w, jobsim.JobMPSPrio))
		cm := p.capMeans(w)
		for _, c := range slices.Sorted(maps.Keys(cm)) {
			row(jobsim.JobMMK, fmt.Sprint(c), cm[c])
		}
	})
}

// capMeans is mmk at load 1 by cap on jobs per instance, the default's
// included.
func (p *report) capMeans(w workload) map[int]mean {
	out := map[int]mean{}
	for _, c := range append(slices.Clone(capShares), jobsim.DefaultMaxShare) {
		x := run{workload: w.name, gpus: w.gpus, load: 1, policy: jobsim.JobMMK, mig: jobsim.DefaultMIGReconfig}
		if c != jobsim.DefaultMaxShare {
			x.maxShare = c
		}
		out[c] = average(p.seedsLike(x))
	}
	return out
}

// h100 is the main comparison on H100 geometry, where MIG mode costs no
// SMs (7g.80gb holds all 132).
func (p *report) h100(b *bytes.Buffer) {
	fmt.Fprintf(b, "## On %s geometry (load 1)\n\n", h100Model)
	b.WriteString("The GPUs mmkd was measured on (docs/results/mmkd-e2e-h100.md). Their whole-GPU MIG instance has every SM, so MIG mode costs the MIG policies nothing against MPS. The ground truth is the same (H200-measured); the policies decide with the predictor trained on the H100 campaign, the GPU of this geometry, so its error against the ground truth includes the two GPUs' difference.\n\n")
	perWorkload(b, policyHeader, func(w workload) {
		for _, pol := range h100Pols {
			policyRow(b, pol, p.h100At1(w, pol))
		}
	})
}

// h100At1 is a policy's mean at load 1 on H100 geometry.
func (p *report) h100At1(w workload, policy string) mean {
	return average(p.seedsLike(run{workload: w.name, gpus: w.gpus, load: 1, policy: policy, mig: jobsim.DefaultMIGReconfig, gpuModel: h100Model}))
}

func (p *report) openb(b *bytes.Buffer) {
	w := workload{name: openbSpec, gpus: openbGPUs}
	fmt.Fprintf(b, "## %s on %d x %s (one run)\n\n", openbSpec, openbGPUs, p.model.Key)
	b.WriteString("The first 200 jobs of the Alibaba openb trace by creation time, under a work model the trace supports (`trace.OpenBJobs`): pods that ran with a GPU; qos LS and Guaranteed are services lasting their run time, busy a quarter of the GPU share they asked for; BE, Burstable and pods without qos are offline jobs whose work alone on a whole GPU is their run time times their GPU share (gpu_milli / 1000); a pod asking for k GPUs is k whole-GPU jobs; job types by a hash of the pod name. The reader takes every pod list variant of the public trace (`trace.ReadOpenBPods`); the multigpu variants have no times and cannot be replayed. Services running for weeks are measured on randomly drawn 30 s windows of their life (200,000 requests at most per service).\n\n")
	b.WriteString(policyHeader)
	for _, pol := range jobsim.Policies() {
		if r := p.res[run{workload: w.name, gpus: w.gpus, seed: 1, policy: pol, mig: jobsim.DefaultMIGReconfig}]; r != nil {
			policyRow(b, pol, average([]*jobsim.Result{r}))
		}
	}
	b.WriteString("\n")
}

// why gives the measured reasons where mmk falls short.
func (p *report) why(b *bytes.Buffer) {
	b.WriteString("## Why, where mmk falls short\n\n")
	full := p.model.Profiles[len(p.model.Profiles)-1]
	for _, w := range workloads {
		span := p.spans[w.name]
		m := p.at1(w, jobsim.JobMMK)
		g := p.at1(w, jobsim.JobMIGER)
		mps := p.at1(w, jobsim.JobMPS)
		inMIG := p.at1(w, jobsim.JobMPSInMIG)
		noSLO := p.at1(w, jobsim.JobMMK+"-"+jobsim.OptSLO)
		fmt.Fprintf(b, "- **%s, makespan.** Jobs arrive over %.0f s on average and no policy can finish before the last arrival: the most any policy could cut MIGER's makespan (%.0f s) is %.0f %%; mmk's is %.0f s (%s).\n", w.name, span, g.makespan, 100*(1-span/g.makespan), m.makespan, pct(m.makespan, g.makespan))
		fmt.Fprintf(b, "- **%s, SLO.** mmk serves %s of requests within target (p99 %s of it); without the slo option %s (p99 %s), at JCT %.0f s against %.0f s. Of mmk's requests, %s arrived while an offline job shared the service's instance, and %s of those were served in time, against %s of the others: what priority leaves of the offline jobs' interference (memory bandwidth, in the ground truth) is what it misses.\n", w.name, slo(m), p99(m.req.Quantile(0.99)), slo(noSLO), p99(noSLO.req.Quantile(0.99)), noSLO.jct, m.jct, share(m.req.Shared, m.req.Requests), share(m.req.SharedMet, m.req.Shared), share(m.req.Met-m.req.SharedMet, m.req.Requests-m.req.Shared))
		fmt.Fprintf(b, "- **%s, JCT against MIGER.** mmk's mean JCT is %.0f s, MIGER's %.0f s (%s). A job waits for its first start %.0f s on average under MIGER (its queue's head is tried every 35 s, on one GPU, at most 4 jobs each) and %.0f s under mmk; from its first start to its end it takes %.0f s under MIGER and %.0f s under mmk (jobs running per GPU: mmk %.1f, MIGER %.1f).\n", w.name, m.jct, g.jct, pct(m.jct, g.jct), g.wait, m.wait, g.jct-g.wait, m.jct-m.wait, m.jobsGPU, g.jobsGPU)
		pp := p.at1(w, jobsim.JobMPSPrio)
		hMMK, hPrio := p.h100At1(w, jobsim.JobMMK), p.h100At1(w, jobsim.JobMPSPrio)
		fmt.Fprintf(b, "- **%s, against mps-prio (the strongest simple alternative).** mps-prio has JCT %.0f s, batch JCT %.0f s, STP %.2f and SLO %s; mmk %.0f s, %.0f s, %.2f and %s (JCT %s, STP %s). ", w.name, pp.jct, pp.batch, pp.stp, slo(pp), m.jct, m.batch, m.stp, slo(m), pct(m.jct, pp.jct), pct(m.stp, pp.stp))
		fmt.Fprintf(b, "Both run on whole GPUs (mmk with MIG mode off) at the same priorities; mmk differs in its placement (each job to the least busy GPU, services away from services, against mps-prio's most free memory), the slo guard (a job's first start waits %.0f s on average against %.0f s) and its predictor. On %s geometry: JCT %.0f s against %.0f s (%s), SLO %s against %s. ", m.wait, pp.wait, h100Model, hMMK.jct, hPrio.jct, pct(hMMK.jct, hPrio.jct), slo(hMMK), slo(hPrio))
		best, bestCap := math.Inf(1), 0
		for c, cm := range p.capMeans(w) {
			if cm.jct < best {
				best, bestCap = cm.jct, c
			}
		}
		fmt.Fprintf(b, "Across the caps on jobs per instance (the section on the cap) the lowest JCT is %.0f s at %d.\n", best, bestCap)
		p.predictorWhy(b, w)
		withMIG := p.at1(w, mmkMIG)
		fmt.Fprintf(b, "- **%s, MIG.** mmk with MIG managed (%s: Algorithm 1's layout search, MIG mode on every GPU) has JCT %.0f s (%s against mmk) and SLO %s, with %.0f MIG changes per seed: a slice runs below an MPS share of its SMs, and MIG mode alone costs the A100 %d of its %d SMs (mps inside the whole-GPU instance, mps-mig, changes mps's JCT by %s; mps has JCT %.0f s, STP %.2f, SLO %s).\n", w.name, mmkMIG, withMIG.jct, pct(withMIG.jct, m.jct), slo(withMIG), withMIG.reconfigs, p.model.SMs-full.SMs, p.model.SMs, pct(inMIG.jct, mps.jct), mps.jct, mps.stp, slo(mps))
	}
	b.WriteString("\n")
}
