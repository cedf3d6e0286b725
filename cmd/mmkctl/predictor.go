package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/predictor"
)

func newPredictorCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "predictor", Short: "Train, evaluate and query the performance predictor"}
	cmd.AddCommand(newPredictorTrainCommand(a), newPredictorEvalCommand(a), newPredictorCompareCommand(a), newPredictorPredictCommand(a))
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

func (f *forestFlags) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.trees, "trees", 100, "trees of the forest")
	cmd.Flags().IntVar(&f.depth, "depth", 0, "most split levels of a tree (0: unlimited)")
	cmd.Flags().IntVar(&f.maxFeatures, "max-features", 0, "features each split draws (0: a third of them)")
	cmd.Flags().IntVar(&f.minLeaf, "min-leaf", 1, "fewest samples in a leaf")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "random seed")
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

func newPredictorTrainCommand(a *app) *cobra.Command {
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
			m, err := predictor.Train(modelKind(kind), samples, cfg)
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
	cmd.Flags().StringVar(&kind, "model", "rf", "rf (random forest), lr (linear regression) or tree")
	ff.add(cmd)
	cmd.MarkFlagRequired("data")
	cmd.MarkFlagRequired("out")
	return cmd
}

// modelKind maps the CLI's short model names to model kinds.
func modelKind(name string) string {
	switch name {
	case "rf":
		return predictor.KindForest
	case "lr":
		return predictor.KindLinear
	}
	return name
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
	var data string
	var test float64
	ff := &forestFlags{}
	cmd := &cobra.Command{
		Use:   "compare --data samples.csv",
		Short: "Random forest vs linear regression vs one tree on a held-out split (MMK Table IV)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(test > 0 && test < 1) {
				return fmt.Errorf("flag --test: %v is not a fraction in (0, 1)", test)
			}
			_, samples, cfg, err := ff.samplesAndConfig(data)
			if err != nil {
				return err
			}
			train, held := predictor.Split(samples, test, ff.seed)
			cmp, err := predictor.Compare(train, held, cfg)
			if err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(map[string]any{"models": cmp, "train": len(train), "test": len(held)})
			}
			var rows [][]string
			for _, c := range cmp {
				row := []string{c.Model, fmt.Sprint(c.N), pct2(c.RelError), pct2(c.AbsError)}
				for _, g := range c.PerCoRunner {
					row = append(row, fmt.Sprintf("%s (%d)", pct2(g.RelError), g.N))
				}
				rows = append(rows, row)
			}
			fmt.Fprintf(p.w, "trained on %d samples, tested on %d held out (seed %d)\n", len(train), len(held), ff.seed)
			header := []string{"MODEL", "N", "REL_ERROR", "ABS_ERROR"}
			for _, g := range cmp[0].PerCoRunner {
				header = append(header, fmt.Sprintf("REL_ERROR_%d_CO", g.CoRunners))
			}
			if err := p.Table("", header, rows); err != nil {
				return err
			}
			for _, c := range cmp {
				fmt.Fprintf(p.w, "\n%s per job type:\n", c.Model)
				if err := p.Table("  ", errHeader, jobRows(c.PerJob)); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "samples CSV (required)")
	cmd.Flags().Float64Var(&test, "test", 0.2, "fraction held out for testing")
	ff.add(cmd)
	cmd.MarkFlagRequired("data")
	return cmd
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
	for _, f := range []string{"model", "data", "job"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}
