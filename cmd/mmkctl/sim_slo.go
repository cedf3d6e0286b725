package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/sim/slosuite"
	"github.com/mmkgpu/mmk/slo"
)

// simSLOFlags are the flags of `mmkctl sim slo`.
type simSLOFlags struct {
	calibration []string
	split       string
	n           int
	out         string
	heldOutMix  string
	ladder      string
	statics     string
	scenario    int
	summary     bool
	seeded      bool
	also        []string
	set         []string
}

func newSimSLOCommand(a *app) *cobra.Command {
	f := &simSLOFlags{}
	cmd := &cobra.Command{
		Use:   "slo [--split tune|held-out|both] [--calibration FILE ...] [--out DIR]",
		Short: "Score the latency controller on the scenario suite against every static setting",
		Long: `Runs the latency controller's scenario suite (sim/slosuite, issue 52):
scenarios drawn from a GPU's calibration (bench/gpu/calibrate.sh: each
service's service times and the trainers' speed under each rung and
static setting beside each trainer mix), in two seeded splits fixed
before any tuning (tune, and held-out, which alone draws from the last
calibrated mix). Each scenario runs through a queue model under every
static setting and under mmk's controller, on the same requests, and
is judged per segment of 20 s: does the controller hold every target
(its percentile of requests within the bound) where some static setting
does, and how fast are its trainers against the fastest static setting
that held every segment.

Prints the table (markdown); with --out, writes suite.md, suite.svg (the
CDF of the speed ratios), frontier.svg (each controller and static
setting: the share of segments held against the median speed) and
scenarios.jsonl (each scenario's runs).
Without --calibration it uses the calibration built into mmkctl
(` + slosuite.BuiltinNames() + `).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimSLO(a, cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.calibration, "calibration", nil, "a calib.jsonl (or .jsonl.gz) of bench/gpu/calibrate.sh (repeatable; default the built-in one)")
	fl.StringVar(&f.split, "split", "both", "the split to run: tune, held-out or both")
	fl.IntVarP(&f.n, "scenarios", "n", slosuite.DefaultN, "scenarios per split")
	fl.StringVar(&f.out, "out", "", "write suite.md, suite.svg, frontier.svg and scenarios.jsonl to this folder")
	fl.StringVar(&f.statics, "statics", "", "the static settings compared, comma-separated: each a calibrated setting (default every calibrated one but suspend)")
	fl.StringVar(&f.heldOutMix, "held-out-mix", "", "the calibrated mix only the held-out split draws from (default the last calibrated)")
	fl.StringVar(&f.ladder, "ladder", strings.Join(slosuite.DefaultLadder().Strings(), ","), "the controller's rungs, cheapest first, comma-separated: each a calibrated setting")
	fl.StringArrayVar(&f.set, "set", nil, "a setting of the controller for this run, KEY=VALUE: risk, tolerance, aim, prior-penalty, alpha (numbers), calm, replay, judge, short (durations) (repeatable)")
	fl.StringArrayVar(&f.also, "also", nil, "another controller to score beside it, its settings KEY=VALUE[,KEY=VALUE] as --set takes them (repeatable): a sweep in one run, on the same requests")
	fl.BoolVar(&f.seeded, "seeded", false, "give the controller every rung's service times from the start (the calibration's): what learning the plant costs it")
	fl.BoolVar(&f.summary, "summary", false, "print the calibration (per mix and setting: the trainers' speed, each service's service times) and stop")
	fl.IntVar(&f.scenario, "scenario", -1, "run only this scenario (its index in the split) and print its runs and the controller's decisions")
	return cmd
}

func runSimSLO(a *app, cmd *cobra.Command, f *simSLOFlags) error {
	if f.n < 1 || f.n > 100000 {
		return fmt.Errorf("flag -n: %d is outside 1..100000", f.n)
	}
	var splits []slosuite.Split
	switch f.split {
	case "both":
		splits = []slosuite.Split{slosuite.Tune, slosuite.HeldOut}
	case string(slosuite.Tune), string(slosuite.HeldOut):
		splits = []slosuite.Split{slosuite.Split(f.split)}
	default:
		return fmt.Errorf("flag --split: %q; want tune, held-out or both", f.split)
	}
	cal, err := loadCalibration(f.calibration)
	if err != nil {
		return fmt.Errorf("flag --calibration: %w", err)
	}
	if f.summary {
		return cal.WriteSummary(cmd.OutOrStdout())
	}
	suite, err := slosuite.NewSuite(cal)
	if err != nil {
		return err
	}
	suite.N = f.n
	if f.heldOutMix != "" {
		if cal.Mix(f.heldOutMix) == nil {
			return fmt.Errorf("flag --held-out-mix: %q is not a calibrated mix", f.heldOutMix)
		}
		suite.HeldOutMix = f.heldOutMix
	}
	if f.statics != "" {
		suite.Statics = nil
		for _, st := range strings.Split(f.statics, ",") {
			st = strings.TrimSpace(st)
			if !slices.ContainsFunc(cal.Mixes, func(m *slosuite.Mix) bool { return m.Settings[st] != nil }) {
				return fmt.Errorf("flag --statics: %q was not calibrated (calibrated: %s)", st, strings.Join(cal.Mixes[0].SettingNames(), ", "))
			}
			suite.Statics = append(suite.Statics, st)
		}
	}
	if suite.Ladder, err = slo.ParseLadder(strings.Split(f.ladder, ",")); err == nil {
		err = suite.Ladder.Check()
	}
	if err != nil {
		return fmt.Errorf("flag --ladder: %w", err)
	}
	for _, r := range suite.Ladder.Strings() {
		if !slices.ContainsFunc(cal.Mixes, func(m *slosuite.Mix) bool { return m.Settings[r] != nil }) {
			return fmt.Errorf("flag --ladder: rung %s was not calibrated (calibrated: %s)", r, strings.Join(cal.Mixes[0].SettingNames(), ", "))
		}
	}
	// The controller's defaults, but its priors: those of the other
	// mixes' calibration, never the scenario's own.
	base := slo.DefaultConfig()
	for _, kv := range f.set {
		if err := setControllerKey(&base, kv); err != nil {
			return fmt.Errorf("flag --set: %w", err)
		}
	}
	// The controller's configuration (its priors: those of the other
	// mixes' calibration, never the scenario's own), and each --also.
	candidate := func(name string, cfg slo.Config) slosuite.Candidate {
		return slosuite.Candidate{Name: name, Seeded: f.seeded, Config: func(sc *slosuite.Scenario) slo.Config {
			c := cfg
			c.Priors = cal.RungPriors(sc.Mix)
			return c
		}}
	}
	cands := []slosuite.Candidate{candidate("mmk", base)}
	for _, also := range f.also {
		cfg := base
		for _, kv := range strings.Split(also, ",") {
			if err := setControllerKey(&cfg, kv); err != nil {
				return fmt.Errorf("flag --also: %w", err)
			}
		}
		cands = append(cands, candidate("mmk "+also, cfg))
	}
	var sums, staticSums []slosuite.Summary
	var outsOne []*slosuite.Outcome // the first controller's (--scenario)
	var detail bytes.Buffer
	for _, split := range splits {
		scs, err := suite.Scenarios(split)
		if err != nil {
			return err
		}
		if f.scenario >= 0 {
			if f.scenario >= len(scs) {
				return fmt.Errorf("flag --scenario: %d; the split has %d scenarios", f.scenario, len(scs))
			}
			scs = scs[f.scenario : f.scenario+1]
		}
		p := progress.New(cmd.ErrOrStderr())
		outs, err := suite.Run(scs, cands, func(n int) { p.Updatef(n, len(scs), "sim slo: %s: %d of %d scenarios", split, n, len(scs)) })
		if err != nil {
			return err
		}
		outsOne = append(outsOne, outs[0]...)
		for _, st := range suite.Statics {
			staticSums = append(staticSums, slosuite.Summarize(split, st, slosuite.AsController(outs[0], st)))
		}
		for i, c := range cands {
			sums = append(sums, slosuite.Summarize(split, c.Name, outs[i]))
			for _, o := range outs[i] {
				if err := writeOutcome(&detail, o); err != nil {
					return err
				}
			}
		}
	}
	var table bytes.Buffer
	if err := slosuite.WriteTable(&table, sums); err != nil {
		return err
	}
	table.WriteString("\nEach static setting scored as the controller is, the strongest simple alternatives:\n\n")
	if err := slosuite.WriteStaticsTable(&table, staticSums); err != nil {
		return err
	}
	if _, err := cmd.OutOrStdout().Write(table.Bytes()); err != nil {
		return err
	}
	if f.scenario >= 0 {
		if _, err := cmd.OutOrStdout().Write(detail.Bytes()); err != nil {
			return err
		}
		return writeDecisions(cmd.OutOrStdout(), outsOne)
	}
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("flag --out: %w", err)
	}
	var plot, frontier bytes.Buffer
	if err := slosuite.WritePlot(&plot, "The latency controller against the best static setting, per scenario", sums); err != nil {
		return err
	}
	if err := slosuite.WriteFrontier(&frontier, "Held against speed: the controllers and every static setting", sums, staticSums); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"suite.md": table.Bytes(), "suite.svg": plot.Bytes(), "frontier.svg": frontier.Bytes(), "scenarios.jsonl": detail.Bytes()} {
		if err := atomicfile.Write(filepath.Join(f.out, name), b); err != nil {
			return fmt.Errorf("flag --out: %w", err)
		}
	}
	return nil
}

// loadCalibration reads the calibration files, or the built-in one.
func loadCalibration(paths []string) (*slosuite.Calibration, error) {
	if len(paths) == 0 {
		return slosuite.Builtin()
	}
	return slosuite.LoadCalibration(paths...)
}

// outcomeLine is a scenario's runs as scenarios.jsonl writes them.
type outcomeLine struct {
	Split    slosuite.Split `json:"split"`
	ID       int            `json:"id"`
	Scenario string         `json:"scenario"`
	Runs     []runLine      `json:"runs"`
}

// runLine is one policy's run: per segment whether it held, the
// attainment and the trainers' speed.
type runLine struct {
	Policy     string  `json:"policy"`
	Held       []bool  `json:"held"`
	Attainment float64 `json:"attainment"`
	Speed      float64 `json:"speed"`
	Changes    int     `json:"changes,omitempty"`
	OnRungS    []int   `json:"onRungS,omitempty"`
	// Rungs are the controller's changes: [seconds, rung] each.
	Rungs [][2]float64 `json:"rungs,omitempty"`
}

func writeOutcome(b *bytes.Buffer, o *slosuite.Outcome) error {
	l := outcomeLine{Split: o.Scenario.Split, ID: o.Scenario.ID, Scenario: o.Scenario.String()}
	for _, r := range append([]*slosuite.Result{o.Controller}, o.Statics...) {
		rl := runLine{Policy: r.Policy, Attainment: r.Attainment(), Speed: r.Speed, Changes: r.Changes}
		for j := range o.Scenario.SegmentCount() {
			rl.Held = append(rl.Held, r.Held(o.Scenario, j))
		}
		for _, d := range r.OnRung {
			rl.OnRungS = append(rl.OnRungS, int(d.Seconds()))
		}
		for _, d := range r.Decisions {
			rl.Rungs = append(rl.Rungs, [2]float64{d.At.Seconds(), float64(d.To)})
		}
		l.Runs = append(l.Runs, rl)
	}
	enc, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("scenarios.jsonl: %w", err)
	}
	b.Write(append(enc, '\n'))
	return nil
}

// writeDecisions prints each outcome's controller decisions, a line each.
func writeDecisions(w io.Writer, outs []*slosuite.Outcome) error {
	for _, o := range outs {
		for _, d := range o.Controller.Decisions {
			if _, err := fmt.Fprintf(w, "%s #%d %7.2fs %s\n", o.Scenario.Split, o.Scenario.ID, d.At.Seconds(), d.Reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// setControllerKey sets one of the controller's settings from KEY=VALUE.
func setControllerKey(c *slo.Config, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q: want KEY=VALUE, such as risk=0.1", kv)
	}
	durations := map[string]*time.Duration{"calm": &c.Calm, "judge": &c.Judge, "short": &c.Short, "replay": &c.Replay}
	numbers := map[string]*float64{"risk": &c.Risk, "tolerance": &c.Tolerance, "aim": &c.Aim, "prior-penalty": &c.PriorPenalty, "alpha": &c.Alpha}
	if p, ok := durations[k]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s=%s: want a duration such as 10s", k, v)
		}
		*p = d
	} else if p, ok := numbers[k]; ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s=%s: not a number", k, v)
		}
		*p = x
	} else {
		return fmt.Errorf("%q: unknown setting; want risk, tolerance, aim, prior-penalty, alpha, calm, replay, judge or short", k)
	}
	if _, err := slo.New(*c); err != nil {
		return fmt.Errorf("%s: %w", kv, err)
	}
	return nil
}
