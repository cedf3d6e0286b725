// Command simcheck checks the job simulator's ground truth against a real
// run of the same jobs: the end-to-end H100 rounds of mmkd
// (bench/gpu/mmkd-e2e.sh, docs/results/mmkd-e2e-h100.md), where two
// services and four trainers shared one GPU under time slicing (no mmk),
// MPS with the trainers at client priority 1 (by hand), and mmkd. For
// each job and phase it compares the measured speed against the same
// job alone in the same round with what jobsim.SpeedModel runs it at,
// given when each job was on the GPU; for each co-located run of the H100
// profiling campaign, what co-runners and MPS client priority did to a job
// against what the ground truth has them do; and, given a JOBSET=sim run
// (-replay), jobsim.Simulate replaying each of its phases against what the
// GPU measured (SLO attainment, the trainers' times, the makespan):
//
//	go run ./bench/simcheck -e2e docs/results/mmkd-e2e-h100-2026-11-25/e2e.jsonl \
//	  -campaign data/profiles/h100-2026-11-25.csv \
//	  -replay docs/results/simcase-h100-2026-11-25/e2e.jsonl -o docs/results/simcheck-h100.md
//
// With -services GPU=DIR,... it checks instead services against services:
// the SLO benchmark's two services together under MPS without trainers
// (bench/gpu/slo.py, setting together), their p50 and p99 over alone as
// measured and as jobsim.Simulate predicts them (services.go):
//
//	go run ./bench/simcheck -services H200-141GB=docs/results/slo-h200-2026-11-26/round0,... \
//	  -o docs/results/simcheck-services.md
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/data"
	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/stats"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// thinkMs is the services' pause between requests in the e2e rounds
// (bench/gpu/mmkd-e2e.sh: a closed loop, batch 1, 2 ms think): a service
// leaves the GPU think/(latency+think) of its time.
const thinkMs = 2.0

// line is one job of one phase of one round in e2e.jsonl.
type line struct {
	Round  int     `json:"round"`
	Phase  string  `json:"phase"`
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`
	T0     float64 `json:"t0"`
	Report struct {
		Job    string  `json:"job"`
		ItPerS float64 `json:"it_per_s"`
		P50Ms  float64 `json:"p50_ms"`
		MeanMs float64 `json:"mean_ms"`
		// An open-loop service's (e2e_job.py serve --rate; JOBSET=sim).
		Rate      float64   `json:"rate"`
		LatMs     []float64 `json:"lat_ms"`
		ServiceMs float64   `json:"service_ms"`
		Iters     int       `json:"iters"`
		TStart    float64   `json:"t_start"`
		TEnd      float64   `json:"t_end"`
		Dry       bool      `json:"dry"`
	} `json:"report"`
}

// aloneRuns are the alone phase's lines by round and job name: what
// every ratio and replay measures a job against.
type aloneRuns map[int]map[string]line

func aloneRunsOf(lines []line) aloneRuns {
	a := aloneRuns{}
	for _, l := range lines {
		if l.Phase != "alone" {
			continue
		}
		if a[l.Round] == nil {
			a[l.Round] = map[string]line{}
		}
		a[l.Round][l.Name] = l
	}
	return a
}

// medians is a with each job's alone line in every round replaced by
// one holding the median over the rounds of its speed (ItPerS) and GPU
// time per request (ServiceMs): a job's own properties, taken from the
// alone phase, the noisiest of a round (one process alone moves ±25 %
// from one minute to the next on the H100 host: GPU-FACTS.md).
func (a aloneRuns) medians() aloneRuns {
	speeds, service := map[string][]float64{}, map[string][]float64{}
	for _, byName := range a {
		for name, l := range byName {
			speeds[name] = append(speeds[name], l.Report.ItPerS)
			service[name] = append(service[name], l.Report.ServiceMs)
		}
	}
	out := aloneRuns{}
	for round, byName := range a {
		out[round] = map[string]line{}
		for name, l := range byName {
			l.Report.ItPerS, l.Report.ServiceMs = stats.Median(speeds[name]), stats.Median(service[name])
			out[round][name] = l
		}
	}
	return out
}

// of is the alone line of l's job in l's round.
func (a aloneRuns) of(l line) (line, error) {
	x, ok := a[l.Round][l.Name]
	if !ok {
		return line{}, fmt.Errorf("round %d: %s ran in %s but not alone", l.Round, l.Name, l.Phase)
	}
	return x, nil
}

// phases are the shared phases checked: whether the GPU was time sliced,
// whether the trainers ran at client priority 1, and the simulator's
// policy that replays the phase (replay).
var phases = []struct {
	name          string
	slicing, prio bool
	what          string
	sim           string
}{
	{"baseline", true, false, "time slicing, no mmk", jobsim.JobDefault},
	{"mps-prio", false, true, "MPS, trainers at priority 1 by hand", jobsim.JobMPSPrio},
	{"mmk", false, true, "mmkd: MPS, priority shares", mmkdPolicy},
	{"mmk-nohook", false, true, "mmkd without the hook", mmkdPolicy},
}

func main() {
	e2e := flag.String("e2e", "docs/results/mmkd-e2e-h100-2026-11-25/e2e.jsonl", "the e2e rounds' lines")
	campaign := flag.String("campaign", "data/profiles/h100-2026-11-25.csv", "the H100 profiling campaign's samples (\"\": leave that check out)")
	replayPath := flag.String("replay", "", "a JOBSET=sim run's e2e.jsonl (bench/gpu/mmkd-e2e.sh) for the simulator to replay on one H100 (\"\": none)")
	services := flag.String("services", "", "GPU=DIR,...: SLO benchmark runs (bench/gpu/slo.py) and their GPU models; writes only the services-against-services check")
	out := flag.String("o", "", "write the report here (default: standard output)")
	flag.Parse()
	var err error
	if *services != "" {
		err = runServices(strings.Split(*services, ","), *out)
	} else {
		err = run(*e2e, *campaign, *replayPath, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "simcheck:", err)
		os.Exit(1)
	}
}

func readLines(path string) ([]line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if l.Report.Dry {
			return nil, fmt.Errorf("%s:%d: a dry run's line (no GPU): nothing to check", path, n)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// ratio is a job's measured speed against itself alone in the same
// round: throughput for trainers, inverse median latency for services.
func ratio(l, alone line) (float64, error) {
	if l.Kind == "online" {
		if l.Report.P50Ms <= 0 || alone.Report.P50Ms <= 0 {
			return 0, fmt.Errorf("round %d %s %s: p50 %v ms, alone %v ms: want both > 0", l.Round, l.Phase, l.Name, l.Report.P50Ms, alone.Report.P50Ms)
		}
		return alone.Report.P50Ms / l.Report.P50Ms, nil
	}
	if l.Report.ItPerS <= 0 || alone.Report.ItPerS <= 0 {
		return 0, fmt.Errorf("round %d %s %s: %v it/s, alone %v it/s: want both > 0", l.Round, l.Phase, l.Name, l.Report.ItPerS, alone.Report.ItPerS)
	}
	return l.Report.ItPerS / alone.Report.ItPerS, nil
}

// pair is one job in one phase of one round: measured and predicted.
type pair struct{ meas, pred float64 }

func run(path, campaign, replayPath, out string) error {
	lines, err := readLines(path)
	if err != nil {
		return err
	}
	truth, models, err := loadModels(replayPath != "")
	if err != nil {
		return err
	}
	alone := aloneRunsOf(lines)
	var names []string
	for _, l := range lines {
		if l.Phase == "alone" && !slices.Contains(names, l.Name) {
			names = append(names, l.Name)
		}
	}
	rounds := slices.Sorted(maps.Keys(alone))
	res := map[string]map[string][]pair{} // phase, job name
	most := 0                             // jobs on the GPU at once
	for _, ph := range phases {
		res[ph.name] = map[string][]pair{}
		for _, r := range rounds {
			var jobs []jobsim.RunJob
			var ls []line
			for _, l := range lines {
				if l.Round != r || l.Phase != ph.name {
					continue
				}
				if _, err := alone.of(l); err != nil {
					return err
				}
				j := jobsim.RunJob{Type: l.Report.Job, Start: l.Report.TStart - l.T0, End: l.Report.TEnd - l.T0}
				if l.Kind == "online" {
					// Its pause over its request cycle in this phase.
					lat := cmp.Or(l.Report.MeanMs, l.Report.P50Ms)
					j.Idle = thinkMs / (lat + thinkMs)
				} else if ph.prio {
					j.Prio = 1
				}
				jobs, ls = append(jobs, j), append(ls, l)
			}
			if len(jobs) == 0 {
				continue
			}
			most = max(most, mostAtOnce(jobs))
			pred, err := truth.RunSpeeds(ph.slicing, jobs)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, ph.name, err)
			}
			for i, l := range ls {
				m, err := ratio(l, alone[r][l.Name])
				if err != nil {
					return err
				}
				res[ph.name][l.Name] = append(res[ph.name][l.Name], pair{m, pred[i] / truth.Alone(l.Report.Job, 100)})
			}
		}
	}
	var b bytes.Buffer
	report(&b, path, len(rounds), names, res, truth.Fit(), most)
	if campaign != "" {
		if err := campaignCheck(&b, campaign, truth); err != nil {
			return err
		}
	}
	if models == nil {
		if models, err = jobsim.BuiltinModels(1); err != nil {
			return err
		}
	}
	if err := slicesCheck(&b, models); err != nil {
		return err
	}
	if replayPath != "" {
		rl, err := readLines(replayPath)
		if err != nil {
			return err
		}
		h100, err := partitioner.LookupModel("H100-80GB")
		if err != nil {
			return err
		}
		if err := replay(&b, replayPath, rl, models, h100); err != nil {
			return fmt.Errorf("replay %s: %w", replayPath, err)
		}
	}
	if out == "" {
		_, err := io.Copy(os.Stdout, &b)
		return err
	}
	return atomicfile.Write(out, b.Bytes())
}

// loadModels is the simulator's ground truth, built from the built-in
// profiles; with replay, the whole job models the replay simulates with
// (jobsim.BuiltinModels, whose truth it is), so that the truth is built
// once.
func loadModels(replay bool) (*jobsim.SpeedModel, *jobsim.Models, error) {
	if replay {
		models, err := jobsim.BuiltinModelsFor(1, "H100-80GB") // the replayed run is an H100's
		if err != nil {
			return nil, nil, err
		}
		return models.Truth, models, nil
	}
	_, samples, err := data.Samples()
	if err != nil {
		return nil, nil, err
	}
	truth, err := jobsim.NewSpeedModel(samples)
	return truth, nil, err
}

// mostAtOnce is the most jobs whose windows overlap at one time.
func mostAtOnce(jobs []jobsim.RunJob) int {
	most := 0
	for _, a := range jobs {
		n := 0
		for _, b := range jobs {
			if b.Start <= a.Start && b.End > a.Start {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func spread(v []float64) string {
	return fmt.Sprintf("%.2f [%.2f-%.2f]", stats.Median(v), slices.Min(v), slices.Max(v))
}

func report(b *bytes.Buffer, path string, rounds int, names []string, res map[string]map[string][]pair, fit jobsim.Fit, most int) {
	b.WriteString("# The job simulator against a real H100 run of the same jobs\n\n")
	fmt.Fprintf(b, "Generated by `make results-simcheck` (`go run ./bench/simcheck -e2e %s`) on %s from the %d rounds of mmkd's end-to-end run on one H100 (docs/results/mmkd-e2e-h100.md): two services (resnet50, mobilenet_v2: batch 1, %.0f ms think) and four trainers sharing the whole GPU.\n\n", path, time.Now().UTC().Format("2006-01-02"), rounds, thinkMs)
	b.WriteString("For each job and phase: its **measured** speed against itself alone in the same round (trainers: iterations per second; services: the inverse of the median latency), and what the simulator's ground truth (`jobsim.SpeedModel`, built from the H200 profiles, the same code `jobsim` runs shared GPUs with: `SpeedModel.RunSpeeds`) **predicts** for it, given when each job was on the GPU (its timed window; services leave the GPU think/(latency + think) of the time, their mean latency in the phase: an upper bound on their GPU time, since a closed loop's latency includes its CPU time). Medians over the rounds [min-max]; the error is the predicted median over the measured one, minus 1.\n\n")
	fmt.Fprintf(b, "For scale: the ground truth reproduces the co-located H200 runs it was fitted on (2 and 3 jobs at once) with a mean error of %.1f %%; here up to %d jobs ran at once, and the services ran at batch 1, which the profiles (batch 32) never measured.\n\n", 100*fit.MeanError, most)
	b.WriteString("| phase | job | measured | predicted | error |\n|---|---|---|---|---|\n")
	type summary struct {
		what      string
		abs, bias float64
		n         int
		worst     string
		worstErr  float64
	}
	var sums []summary
	for _, ph := range phases {
		s := summary{what: ph.name + " (" + ph.what + ")"}
		for _, name := range names {
			ps := res[ph.name][name]
			if len(ps) == 0 {
				continue
			}
			var meas, pred []float64
			for _, p := range ps {
				meas, pred = append(meas, p.meas), append(pred, p.pred)
				e := p.pred/p.meas - 1
				s.abs += math.Abs(e)
				s.bias += e
				s.n++
			}
			e := stats.Median(pred)/stats.Median(meas) - 1
			if math.Abs(e) > math.Abs(s.worstErr) {
				s.worst, s.worstErr = name, e
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %+.0f %% |\n", ph.name, name, spread(meas), spread(pred), 100*e)
		}
		if s.n > 0 {
			s.abs /= float64(s.n)
			s.bias /= float64(s.n)
		}
		sums = append(sums, s)
	}
	b.WriteString("\n## Summary\n\nThe mean of |predicted / measured - 1| over every job and round, its mean sign (above 0: the simulator runs jobs faster than the GPU did), and the job the simulator gets worst:\n\n")
	b.WriteString("| phase | mean error | bias | worst |\n|---|---|---|---|\n")
	for _, s := range sums {
		fmt.Fprintf(b, "| %s | %.0f %% | %+.0f %% | %s (%+.0f %%) |\n", s.what, 100*s.abs, 100*s.bias, s.worst, 100*s.worstErr)
	}
	b.WriteString("\nHow the ground truth gets there (its model, `sim/jobsim/jobspeed.go`): a co-runner at the job's priority takes its MPS share of the SMs for the time it is busy, and shares summing to S above the GPU's 100 % run as at (100/S)^β of their share; a co-runner at a higher priority takes first, while busy, the warp slots it occupies alone at its share (its SM occupancy, measured at batch 32); memory interference counts each co-runner's DRAM use at the share it effectively gets. Batch-1 kernels occupy fewer slots than the batch-32 profiles say, and a closed loop's latency includes its CPU time, so here it still predicts less than measured: the simulator understates what sharing one GPU gives to jobs next to batch-1 services.\n\n")
}
