package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/predictor"
)

func newPredictorCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "predictor", Short: "Train, evaluate and query the performance predictor"}
	cmd.AddCommand(newPredictorTrainCommand(), newPredictorEvalCommand(a), newPredictorCompareCommand(a), newPredictorPredictCommand(a))
	return cmd
}

// readSamplesFile reads a samples CSV named by a flag.
func readSamplesFile(flag, path string) (predictor.Header, []predictor.Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("flag --%s: %w", flag, err)
	}
	defer f.Close()
	h, s, err := predictor.ReadSamples(f)
	if err != nil {
		return nil, nil, fmt.Errorf("flag --%s %s: %w", flag, path, err)
	}
	if len(s) == 0 {
		return nil, nil, fmt.Errorf("flag --%s %s: no samples", flag, path)
	}
	return h, s, nil
}

// loadModelAndSamples loads the --model file and the --data samples.
func loadModelAndSamples(model, data string) (*predictor.Model, []predictor.Sample, error) {
	m, err := predictor.LoadModel(model)
	if err != nil {
		return nil, nil, fmt.Errorf("flag --model: %w", err)
	}
	_, samples, err := readSamplesFile("data", data)
	if err != nil {
		return nil, nil, err
	}
	return m, samples, nil
}

// forestFlags are the model's hyper-parameters.
type forestFlags struct {
	trees, depth, maxFeatures, minLeaf int
	seed                               uint64
}

// add adds the hyper-parameters' flags to cmd; seed adds --seed (compare
// draws its own per split: --seeds).
func (f *forestFlags) add(cmd *cobra.Command, seed bool) {
	cmd.Flags().IntVar(&f.trees, "trees", 100, "trees of the forest")
	cmd.Flags().IntVar(&f.depth, "depth", 0, "most split levels of a tree (0: unlimited)")
	cmd.Flags().IntVar(&f.maxFeatures, "max-features", 0, "features each split draws (0: a third of them)")
	cmd.Flags().IntVar(&f.minLeaf, "min-leaf", 1, "fewest samples in a leaf")
	f.seed = 1
	if seed {
		cmd.Flags().Uint64Var(&f.seed, "seed", 1, "random seed")
	}
}

// samplesAndConfig reads the --data samples and makes the forest's
// configuration for their features.
func (f *forestFlags) samplesAndConfig(data string) (predictor.Header, []predictor.Sample, predictor.ForestConfig, error) {
	h, samples, err := readSamplesFile("data", data)
	if err != nil {
		return nil, nil, predictor.ForestConfig{}, err
	}
	schema := predictor.SchemaOf(samples)
	cfg, err := f.config(len(schema.Features()))
	return h, samples, cfg, err
}

func (f *forestFlags) config(features int) (predictor.ForestConfig, error) {
	switch {
	case f.trees < 1:
		return predictor.ForestConfig{}, fmt.Errorf("flag --trees: %d must be at least 1", f.trees)
	case f.depth < 0:
		return predictor.ForestConfig{}, fmt.Errorf("flag --depth: %d must not be negative", f.depth)
	case f.maxFeatures < 0 || f.maxFeatures > features:
		return predictor.ForestConfig{}, fmt.Errorf("flag --max-features: %d is outside 0..%d", f.maxFeatures, features)
	case f.minLeaf < 1:
		return predictor.ForestConfig{}, fmt.Errorf("flag --min-leaf: %d must be at least 1", f.minLeaf)
	}
	cfg := predictor.DefaultForest(features)
	cfg.Trees, cfg.Seed, cfg.Tree.MaxDepth, cfg.Tree.MinLeaf = f.trees, f.seed, f.depth, f.minLeaf
	if f.maxFeatures > 0 {
		cfg.Tree.MaxFeatures = f.maxFeatures
	}
	return cfg, nil
}

func newPredictorTrainCommand() *cobra.Command {
	var data, out, kind string
	ff := &forestFlags{}
	cmd := &cobra.Command{
		Use:   "train --data samples.csv --out model.json",
		Short: "Train a model on profiling samples",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, samples, cfg, err := ff.samplesAndConfig(data)
			if err != nil {
				return err
			}
			schema := predictor.SchemaOf(samples)
			k, coid := modelKind(kind)
			cfg.CoIdentity = coid
			m, err := predictor.Train(k, samples, cfg)
			if err != nil {
				return err
			}
			m.Trained.Header = h
			if err := m.Save(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "trained a %s on %d samples of %d job types; wrote %s\n", m.Kind, len(samples), len(schema.Jobs), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "samples CSV (required)")
	cmd.Flags().StringVar(&out, "out", "", "model file to write (required)")
	cmd.Flags().StringVar(&kind, "model", predictor.DefaultModel, "gbrt (gradient boosting, mmk's default), gbrt+co, rf (random forest), rf+co, rf-per-type, lr (linear regression) or tree (see compare)")
	ff.add(cmd, true)
	cmd.MarkFlagRequired("data")
	cmd.MarkFlagRequired("out")
	return cmd
}

// modelKind maps the CLI's model names (predictor.ModelNames) to a model
// kind and whether it takes co-runner identity features; other names go
// through as kinds (Train names the ones it knows when they are wrong).
func modelKind(name string) (string, bool) {
	if m, ok := predictor.ModelNames[name]; ok {
		return m.Kind, m.CoIdentity
	}
	return name, false
}

func newPredictorEvalCommand(a *app) *cobra.Command {
	var model, data string
	cmd := &cobra.Command{
		Use:   "eval --model model.json --data test.csv",
		Short: "Measure a model's absolute and relative error, per job type",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, samples, err := loadModelAndSamples(model, data)
			if err != nil {
				return err
			}
			ev, err := predictor.Evaluate(m, samples)
			if err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(ev)
			}
			return p.Table("", errHeader, append(jobRows(ev.PerJob), []string{"all", "", fmt.Sprint(ev.Overall.N), pct2(ev.Overall.RelError), pct2(ev.Overall.AbsError), ""}))
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model file (required)")
	cmd.Flags().StringVar(&data, "data", "", "samples CSV (required)")
	a.addOutputFlag(cmd)
	cmd.MarkFlagRequired("model")
	cmd.MarkFlagRequired("data")
	return cmd
}

var errHeader = []string{"JOB", "KIND", "N", "REL_ERROR", "ABS_ERROR", "MAE"}

func pct2(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

func jobRows(per []predictor.JobErrors) [][]string {
	rows := make([][]string, 0, len(per))
	for _, j := range per {
		unit := "items/s"
		if j.Kind == predictor.Online {
			unit = "ms"
		}
		rows = append(rows, []string{j.Job, string(j.Kind), fmt.Sprint(j.N), pct2(j.RelError), pct2(j.AbsError), fmt.Sprintf("%.3g %s", j.MAE, unit)})
	}
	return rows
}

func newPredictorCompareCommand(a *app) *cobra.Command {
	var data, seeds, models, features, plot string
	var test float64
	var typeOut, quiet bool
	ff := &forestFlags{}
	cmd := &cobra.Command{
		Use:   "compare --data samples.csv",
		Short: "Compare models without leakage, against the data's noise floor",
		Long: `Trains and tests each model on configuration-disjoint splits (a run's
repetitions and members all train or all test; one split per seed) and, with
--type-out, once per job type left out (every run with that type held out
but its profile: a new job type's error). Beside them the noise floor: each
repetition of a configuration predicted by the mean of its other repetitions
(none when no configuration was measured twice). Models: rf (random forest),
rf+co (with the co-runners' types as features), gbrt and gbrt+co (gradient
boosting), rf-per-type (a forest per job type), lr (linear), tree (one CART
tree). Every number is a mean relative error: the mean over the held-out
samples of |predicted - measured| / measured, of the iteration latency
for online jobs and the throughput for offline ones. --plot draws them.
Progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(test > 0 && test < 1) {
				return fmt.Errorf("flag --test: %v is not a fraction in (0, 1)", test)
			}
			var seedList []uint64
			for _, v := range splitList(seeds) {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("flag --seeds: %q is not a seed (a whole number)", v)
				}
				seedList = append(seedList, n)
			}
			if len(seedList) == 0 {
				return fmt.Errorf("flag --seeds: no seed")
			}
			_, samples, cfg, err := ff.samplesAndConfig(data)
			if err != nil {
				return err
			}
			switch features {
			case "auto":
			case "extended":
				// Files without the extended columns hold what they
				// would say: every member at priority 0, the shares
				// from the runs' keys (ReadSamples derives them).
				for i := range samples {
					samples[i].Extended = true
				}
			default:
				return fmt.Errorf("flag --features: %q is not auto or extended", features)
			}
			stderr := cmd.ErrOrStderr()
			spec := predictor.ProtocolSpec{Models: splitList(models), Seeds: seedList, Test: test, Forest: cfg, TypeOut: typeOut}
			if !quiet {
				n, total := 0, len(spec.Models)*len(seedList)
				if typeOut {
					total += len(spec.Models) * len(predictor.SchemaOf(samples).Jobs)
				}
				spec.Progress = func(model, fold string) {
					n++
					fmt.Fprintf(stderr, "compare: [%d/%d] %s, %s\n", n, total, model, fold)
				}
			}
			res, err := predictor.RunProtocol(samples, spec)
			if err != nil {
				return err
			}
			if plot != "" {
				if err := writeProtocolPlot(plot, data, res); err != nil {
					return fmt.Errorf("flag --plot: %w", err)
				}
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(res)
			}
			return printProtocol(p, res, seedList, test)
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "samples CSV (required)")
	cmd.Flags().Float64Var(&test, "test", 0.2, "fraction of the configurations held out per split")
	cmd.Flags().StringVar(&seeds, "seeds", "1,2,3,4,5", "one configuration-disjoint split per seed")
	cmd.Flags().StringVar(&models, "models", "rf,rf+co,gbrt,gbrt+co,rf-per-type,lr,tree", "models to compare")
	cmd.Flags().BoolVar(&typeOut, "type-out", true, "also leave each job type out once")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	cmd.Flags().StringVar(&plot, "plot", "", "write the models' mean relative errors as an SVG bar chart to this file")
	cmd.Flags().StringVar(&features, "features", "auto", "auto (the extended features where the file has their columns) or extended (derive them for an older file)")
	ff.add(cmd, false)
	a.addOutputFlag(cmd)
	cmd.MarkFlagRequired("data")
	return cmd
}

// writeProtocolPlot writes the protocol's result as an SVG bar chart to
// path.
func writeProtocolPlot(path, data string, res *predictor.ProtocolResult) error {
	var b strings.Builder
	title := fmt.Sprintf("predictor compare: %s (%d samples, %d configurations)", filepath.Base(data), res.Samples, res.Configs)
	if err := predictor.WriteProtocolSVG(&b, title, res); err != nil {
		return err
	}
	return atomicfile.Write(path, []byte(b.String()))
}

// printProtocol writes the protocol's result as tables.
func printProtocol(p printer, res *predictor.ProtocolResult, seeds []uint64, test float64) error {
	f := res.Floor
	fmt.Fprintf(p.w, "%d samples, %d configurations; %d configuration-disjoint splits (seeds %v, %.0f %% of the configurations held out)\n", res.Samples, res.Configs, len(seeds), seeds, 100*test)
	fmt.Fprintln(p.w, "metric: mean relative error (MRE), the mean over held-out samples of |predicted - measured| / measured (online jobs' latency, offline jobs' throughput); lower is better")
	if f.Samples == 0 {
		fmt.Fprintln(p.w, "noise floor: none (no configuration was measured twice)")
	} else {
		fmt.Fprintf(p.w, "noise floor: %s (what a perfect model scores: a repetition against the mean of the others, times sqrt((n-1)/n) for n repetitions; %s unscaled; %d samples of %d configurations, up to %d repetitions", pct2(f.RelError), pct2(f.PairedError), f.Samples, f.Configs, f.Reps)
		for _, c := range f.PerCoRunner {
			fmt.Fprintf(p.w, "; %d co-runners %s", c.CoRunners, pct2(c.RelError))
		}
		if f.WithinWindow > 0 {
			fmt.Fprintf(p.w, "; iterations within a window spread %s", pct2(f.WithinWindow))
		}
		fmt.Fprintln(p.w, ")")
	}
	header := []string{"MODEL", "CONFIG_SPLIT_MRE", "MIN-MAX"}
	if len(res.Models) > 0 {
		for _, c := range res.Models[0].PerCoRunner {
			header = append(header, fmt.Sprintf("%d_CO", c.CoRunners))
		}
	}
	header = append(header, "LEAVE_TYPE_OUT_MRE")
	if f.Samples > 0 {
		header = append(header, "SPLIT/FLOOR")
	}
	var rows [][]string
	for _, m := range res.Models {
		row := []string{m.Model, pct2(m.ConfigsMean), pct2(m.ConfigsMin) + "-" + pct2(m.ConfigsMax)}
		for _, c := range m.PerCoRunner {
			row = append(row, fmt.Sprintf("%s (%d)", pct2(c.RelError), c.N))
		}
		lto := "-"
		if len(m.TypeOut) > 0 {
			lto = pct2(m.TypeOutMean)
		}
		row = append(row, lto)
		if f.Samples > 0 {
			row = append(row, fmt.Sprintf("%.2fx", m.ConfigsMean/f.RelError))
		}
		rows = append(rows, row)
	}
	if err := p.Table("", header, rows); err != nil {
		return err
	}
	fmt.Fprintf(p.w, "\nbest on configuration-disjoint splits: %s\n", res.Best)
	for _, m := range res.Models {
		if m.Model != res.Best || len(m.TypeOut) == 0 {
			continue
		}
		fmt.Fprintf(p.w, "\n%s, each job type left out (trained without its runs but its profile):\n", m.Model)
		var typeRows [][]string
		for _, j := range m.TypeOut {
			typeRows = append(typeRows, []string{j.Job, string(j.Kind), fmt.Sprint(j.N), pct2(j.RelError), pct2(j.AbsError)})
		}
		if err := p.Table("  ", errHeader[:5], typeRows); err != nil {
			return err
		}
	}
	return nil
}

func newPredictorPredictCommand(a *app) *cobra.Command {
	var model, data, job, co string
	var mpsPct, sms int
	cmd := &cobra.Command{
		Use:   "predict --model model.json --data samples.csv --job JOB --mps P [--co JOB@P,...]",
		Short: "Predict one job's latency or throughput at an MPS percentage next to co-runners",
		Long: `Predicts with the model; the job's and co-runners' features (their
utilisation alone) come from the alone runs in --data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, samples, err := loadModelAndSamples(model, data)
			if err != nil {
				return err
			}
			profiles := predictor.Profiles(samples)
			jp, ok := profiles[job]
			if !ok {
				return fmt.Errorf("flag --job: %q has no alone runs in %s", job, data)
			}
			var corunners []predictor.CoRunner
			if co != "" {
				run, err := predictor.ParseRunKey(co)
				if err != nil {
					return fmt.Errorf("flag --co: %w", err)
				}
				for _, mem := range run {
					cp, ok := profiles[mem.Job]
					if !ok {
						return fmt.Errorf("flag --co: %q has no alone runs in %s", mem.Job, data)
					}
					corunners = append(corunners, predictor.CoRunner{Profile: cp, Percent: mem.Percent})
				}
			}
			if mpsPct < 1 || mpsPct > 100 {
				return fmt.Errorf("flag --mps: %d is outside 1..100", mpsPct)
			}
			v, err := predictor.ModelSTP{Model: m}.STP(jp, sms, mpsPct, corunners)
			if err != nil {
				return err
			}
			unit := "items/s (throughput)"
			if predictor.KindOf(job) == predictor.Online {
				unit = "ms per iteration (latency)"
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(map[string]any{"job": job, "mps_pct": mpsPct, "co": co, "prediction": v, "unit": strings.Fields(unit)[0]})
			}
			fmt.Fprintf(p.w, "%s at %d %% next to [%s]: %.4g %s\n", job, mpsPct, co, v, unit)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model file (required)")
	cmd.Flags().StringVar(&data, "data", "", "samples CSV with the alone runs (required)")
	cmd.Flags().StringVar(&job, "job", "", "job type (required)")
	cmd.Flags().StringVar(&co, "co", "", "co-runners JOB@PCT joined by +")
	cmd.Flags().IntVar(&mpsPct, "mps", 100, "the job's MPS percentage")
	cmd.Flags().IntVar(&sms, "sms", 132, "SMs of the instance")
	a.addOutputFlag(cmd)
	for _, f := range []string{"model", "data", "job"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}
