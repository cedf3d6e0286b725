package predictor

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// Errors is how far a model's predictions are from the measurements.
type Errors struct {
	N int `json:"n"`
	// RelError is the mean of |predicted - measured| / measured.
	RelError float64 `json:"rel_error"`
	// AbsError is the mean absolute error divided by the mean measured
	// value of the job type: a fraction, comparable across job types whose
	// targets are in different units.
	AbsError float64 `json:"abs_error"`
	// MAE is the mean absolute error in the target's units (ms or items/s;
	// per job type only).
	MAE float64 `json:"mae,omitempty"`
}

// JobErrors are the errors on one job type.
type JobErrors struct {
	Job  string `json:"job"`
	Kind Kind   `json:"kind"`
	Errors
}

// Evaluation is a model's errors on a dataset, overall, per job type and
// per number of co-runners (0: the job alone).
type Evaluation struct {
	Overall     Errors      `json:"overall"`
	PerJob      []JobErrors `json:"per_job"`
	PerCoRunner []CoErrors  `json:"per_co_runners"`
}

// CoErrors are the errors on the samples with a number of co-runners.
type CoErrors struct {
	CoRunners int `json:"co_runners"`
	Errors
}

// Evaluate predicts every sample and measures the errors. A sample whose
// job type the model does not know is an error.
func Evaluate(m *Model, samples []Sample) (*Evaluation, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("evaluate: no samples")
	}
	if err := m.Schema.Check(SchemaOf(samples)); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	type acc struct{ n, rel, abs, target float64 }
	per := map[string]*acc{}
	preds := make([]float64, len(samples))
	for i, s := range samples {
		p, err := m.Predict(InputOf(s))
		if err != nil {
			return nil, fmt.Errorf("evaluate sample %d: %w", i, err)
		}
		preds[i] = p
		a := per[s.Job]
		if a == nil {
			a = &acc{}
			per[s.Job] = a
		}
		a.n++
		a.target += s.Target()
		a.abs += math.Abs(p - s.Target())
		a.rel += math.Abs(p-s.Target()) / s.Target()
	}
	ev := &Evaluation{}
	var relSum, normSum float64
	byCo := coSums{}
	for i, s := range samples {
		a := per[s.Job]
		rel := math.Abs(preds[i]-s.Target()) / s.Target()
		norm := math.Abs(preds[i]-s.Target()) / (a.target / a.n)
		relSum += rel
		normSum += norm
		byCo.add(s.CoRunners, 1, rel, norm)
	}
	ev.PerCoRunner = byCo.means()
	n := float64(len(samples))
	ev.Overall = Errors{N: len(samples), RelError: relSum / n, AbsError: normSum / n}
	for _, j := range slices.Sorted(maps.Keys(per)) {
		a := per[j]
		ev.PerJob = append(ev.PerJob, JobErrors{Job: j, Kind: KindOf(j), Errors: Errors{
			N: int(a.n), RelError: a.rel / a.n, AbsError: a.abs / a.target, MAE: a.abs / a.n,
		}})
	}
	return ev, nil
}

// Split shuffles samples with the seed and splits off the fraction test
// of them as the test set (MMK: 80/20). Profile samples (IsProfile: each
// job alone at 100 %) are inputs of every prediction, so they always stay
// in the training set and the fraction is taken of the others.
func Split(samples []Sample, test float64, seed uint64) (train, held []Sample) {
	var s []Sample
	for _, smp := range samples {
		if IsProfile(smp) {
			train = append(train, smp)
		} else {
			s = append(s, smp)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x73706c6974))
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	k := int(math.Round(float64(len(s)) * (1 - test)))
	return append(train, s[:k]...), s[k:]
}

// coSums adds up errors by number of co-runners: sums of relative and
// normalised errors over N samples.
type coSums map[int]*Errors

// add counts n samples of co co-runners whose errors sum to rel and abs.
func (c coSums) add(co, n int, rel, abs float64) {
	e := c[co]
	if e == nil {
		e = &Errors{}
		c[co] = e
	}
	e.N += n
	e.RelError += rel
	e.AbsError += abs
}

// means are the mean errors per number of co-runners, fewest first.
func (c coSums) means() []CoErrors {
	var out []CoErrors
	for _, co := range slices.Sorted(maps.Keys(c)) {
		e := c[co]
		out = append(out, CoErrors{CoRunners: co, Errors: Errors{N: e.N, RelError: e.RelError / float64(e.N), AbsError: e.AbsError / float64(e.N)}})
	}
	return out
}
