package predictor

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// member names a job within a configuration: the same member's samples
// across repetitions are the measurements of one quantity.
func member(s Sample) string {
	return fmt.Sprintf("%s|%s@%d/p%d", s.Run, s.Job, s.MPSPercent, s.MPSPriority)
}

// NoiseFloor is how well one repetition of a configuration is predicted
// by the mean of its other repetitions: the error no model can be sure
// to beat on this GPU, because the measurement itself moves that much.
type NoiseFloor struct {
	// Configs and Samples count the configurations with two or more
	// repetitions and their samples; Reps is the most repetitions of one.
	Configs int `json:"configs"`
	Samples int `json:"samples"`
	Reps    int `json:"max_reps"`
	// RelError is the error a perfect model (one that predicts each
	// configuration's true mean) would make on one repetition: the mean
	// over every repeated sample of |mean of the others - one| / one,
	// each scaled by sqrt((n-1)/n) for a configuration of n repetitions.
	// One repetition against the mean of n-1 others differs by the noise
	// of both, whose variance is n/(n-1) times one's: unscaled, a floor
	// over pairs is sqrt(2) times what a perfect model scores.
	RelError float64 `json:"rel_error"`
	// PairedError is the same unscaled: one repetition against the
	// mean of the others, as the floor was before it was corrected.
	PairedError float64 `json:"paired_error"`
	// PerCoRunner is RelError by number of co-runners (0: alone).
	PerCoRunner []CoErrors `json:"per_co_runners"`
	// WithinWindow is the mean of the samples' IterCV: how much the
	// iterations of one window spread (0 where unknown).
	WithinWindow float64 `json:"within_window_cv"`
}

// Floor measures the noise floor of samples: for every configuration
// measured twice or more, each repetition against the mean of the others
// (profile samples included: they are measurements too), corrected for
// the others' own noise (NoiseFloor.RelError).
func Floor(samples []Sample) NoiseFloor {
	groups := map[string][]Sample{}
	for _, s := range samples {
		groups[member(s)] = append(groups[member(s)], s)
	}
	var f NoiseFloor
	configs := map[string]bool{}
	byCo := coSums{}
	var cvSum float64
	var cvN int
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		configs[g[0].Run] = true
		f.Reps = max(f.Reps, len(g))
		total := 0.0
		for _, s := range g {
			total += s.Target()
		}
		n := float64(len(g))
		scale := math.Sqrt((n - 1) / n)
		for _, s := range g {
			others := (total - s.Target()) / (n - 1)
			rel := math.Abs(others-s.Target()) / s.Target()
			f.Samples++
			f.PairedError += rel
			f.RelError += rel * scale
			byCo.add(s.CoRunners, 1, rel*scale, 0)
			if s.IterCV > 0 {
				cvSum += s.IterCV
				cvN++
			}
		}
	}
	f.Configs = len(configs)
	if f.Samples > 0 {
		f.RelError /= float64(f.Samples)
		f.PairedError /= float64(f.Samples)
	}
	f.PerCoRunner = byCo.means()
	if cvN > 0 {
		f.WithinWindow = cvSum / float64(cvN)
	}
	return f
}

// SplitConfigs splits samples by configuration: a run's key (every
// repetition, every member) falls wholly into the training or the test
// set, so that no measurement of a tested configuration is trained on.
// The fraction test of the configurations, drawn from the seed, is held
// out; profile configurations (a job alone at 100 %, its features) always
// train.
func SplitConfigs(samples []Sample, test float64, seed uint64) (train, held []Sample) {
	var keys []string
	seen := map[string]bool{}
	profile := map[string]bool{}
	for _, s := range samples {
		if IsProfile(s) {
			profile[s.Run] = true
		}
		if !seen[s.Run] {
			seen[s.Run] = true
			keys = append(keys, s.Run)
		}
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return profile[k] })
	slices.Sort(keys)
	rng := rand.New(rand.NewPCG(seed, 0x636f6e66))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	k := int(math.Round(float64(len(keys)) * (1 - test)))
	out := map[string]bool{}
	for _, key := range keys[k:] {
		out[key] = true
	}
	for _, s := range samples {
		if out[s.Run] {
			held = append(held, s)
		} else {
			train = append(train, s)
		}
	}
	return train, held
}

// LeaveTypeOut splits samples for a job type the model has never seen
// but profiled: every run with a member of that type is held out, but
// for the type's profile runs (alone at 100 %), which a new job type
// gets before mmk places it.
func LeaveTypeOut(samples []Sample, job string) (train, held []Sample) {
	for _, s := range samples {
		run, err := ParseRunKey(s.Run)
		has := err == nil && slices.ContainsFunc(run, func(m Member) bool { return m.Job == job })
		switch {
		case has && IsProfile(s):
			train = append(train, s)
		case has:
			held = append(held, s)
		default:
			train = append(train, s)
		}
	}
	return train, held
}

// ProtocolModel is one model's errors under the evaluation protocol.
type ProtocolModel struct {
	Model string `json:"model"`
	// Configs is the relative error on configuration-disjoint splits,
	// per seed, and their mean, min and max.
	Configs     []float64 `json:"config_split_rel_errors"`
	ConfigsMean float64   `json:"config_split_rel_error"`
	ConfigsMin  float64   `json:"config_split_min"`
	ConfigsMax  float64   `json:"config_split_max"`
	// PerCoRunner is the config-split error by co-runners, over all seeds.
	PerCoRunner []CoErrors `json:"config_split_per_co_runners"`
	// TypeOut is the relative error on each job type left out, and
	// TypeOutMean their mean over types.
	TypeOut     []JobErrors `json:"leave_type_out"`
	TypeOutMean float64     `json:"leave_type_out_rel_error"`
}

// ProtocolSpec says what the protocol runs.
type ProtocolSpec struct {
	// Models are the models compared (ModelNames' names).
	Models []string
	// Seeds are the configuration-disjoint splits (one per seed) and the
	// models' seeds.
	Seeds []uint64
	// Test is the fraction of configurations held out.
	Test float64
	// Forest is the forests' configuration (its Seed is replaced by each
	// split's).
	Forest ForestConfig
	// TypeOut leaves each job type out once (fold per type).
	TypeOut bool
	// Progress, if set, is told of each fit.
	Progress func(model, fold string)
}

// ProtocolResult is the noise floor and every model's errors.
type ProtocolResult struct {
	Samples int             `json:"samples"`
	Configs int             `json:"configs"`
	Floor   NoiseFloor      `json:"noise_floor"`
	Models  []ProtocolModel `json:"models"`
	// Best is the model with the lowest mean config-split error.
	Best string `json:"best"`
}

// ModelNames are the models the protocol knows: a name, the model kind
// and whether it adds co-runner identity features.
var ModelNames = map[string]struct {
	Kind       string
	CoIdentity bool
}{
	"rf": {KindForest, false}, "rf+co": {KindForest, true}, "gbrt": {KindBoost, false}, "gbrt+co": {KindBoost, true},
	"rf-per-type": {KindPerType, false}, "lr": {KindLinear, false}, "tree": {KindTree, false},
}

// RunProtocol evaluates models without leakage: configuration-disjoint
// splits over the seeds and, with TypeOut, one fold per job type left
// out; beside them the noise floor of the data.
func RunProtocol(samples []Sample, spec ProtocolSpec) (*ProtocolResult, error) {
	if len(spec.Seeds) == 0 || !(spec.Test > 0 && spec.Test < 1) {
		return nil, fmt.Errorf("protocol: %d seeds, test fraction %v: want seeds and a fraction in (0, 1)", len(spec.Seeds), spec.Test)
	}
	res := &ProtocolResult{Samples: len(samples), Floor: Floor(samples)}
	configs := map[string]bool{}
	for _, s := range samples {
		configs[s.Run] = true
	}
	res.Configs = len(configs)
	jobs := SchemaOf(samples).Jobs
	bestErr := 0.0
	for _, name := range spec.Models {
		mk, ok := ModelNames[name]
		if !ok {
			return nil, fmt.Errorf("protocol: model %q is not one of %s", name, strings.Join(slices.Sorted(maps.Keys(ModelNames)), ", "))
		}
		pm := ProtocolModel{Model: name, ConfigsMin: math.Inf(1), ConfigsMax: math.Inf(-1)}
		byCo := coSums{}
		fit := func(train, test []Sample, seed uint64, fold string) (*Evaluation, error) {
			if spec.Progress != nil {
				spec.Progress(name, fold)
			}
			cfg := spec.Forest
			cfg.Seed, cfg.CoIdentity = seed, mk.CoIdentity
			m, err := Train(mk.Kind, train, cfg)
			if err != nil {
				return nil, fmt.Errorf("protocol %s, %s: %w", name, fold, err)
			}
			ev, err := Evaluate(m, test)
			if err != nil {
				return nil, fmt.Errorf("protocol %s, %s: %w", name, fold, err)
			}
			return ev, nil
		}
		for _, seed := range spec.Seeds {
			train, test := SplitConfigs(samples, spec.Test, seed)
			if len(test) == 0 {
				return nil, fmt.Errorf("protocol: seed %d holds out no configuration of %d", seed, len(configs))
			}
			ev, err := fit(train, test, seed, fmt.Sprintf("configs seed %d", seed))
			if err != nil {
				return nil, err
			}
			e := ev.Overall.RelError
			pm.Configs = append(pm.Configs, e)
			pm.ConfigsMean += e / float64(len(spec.Seeds))
			pm.ConfigsMin, pm.ConfigsMax = min(pm.ConfigsMin, e), max(pm.ConfigsMax, e)
			for _, c := range ev.PerCoRunner {
				byCo.add(c.CoRunners, c.N, c.RelError*float64(c.N), c.AbsError*float64(c.N))
			}
		}
		pm.PerCoRunner = byCo.means()
		if spec.TypeOut {
			for _, job := range jobs {
				train, test := LeaveTypeOut(samples, job)
				if len(test) == 0 {
					continue
				}
				ev, err := fit(train, test, spec.Seeds[0], "without "+job)
				if err != nil {
					return nil, err
				}
				pm.TypeOut = append(pm.TypeOut, JobErrors{Job: job, Kind: KindOf(job), Errors: ev.Overall})
				pm.TypeOutMean += ev.Overall.RelError
			}
			if len(pm.TypeOut) > 0 {
				pm.TypeOutMean /= float64(len(pm.TypeOut))
			}
		}
		res.Models = append(res.Models, pm)
		if res.Best == "" || pm.ConfigsMean < bestErr {
			res.Best, bestErr = name, pm.ConfigsMean
		}
	}
	return res, nil
}
