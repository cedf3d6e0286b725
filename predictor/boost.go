package predictor

import (
	"fmt"
	"math/rand/v2"
)

// BoostConfig configures gradient boosting.
type BoostConfig struct {
	// Rounds is how many trees are fitted, one after another, each to
	// what the ones before leave unexplained.
	Rounds int
	// LearnRate shrinks each tree's contribution.
	LearnRate float64
	// Tree bounds each tree (shallow: depth 3-5).
	Tree TreeConfig
	// Subsample is the fraction of rows each tree is fitted on, drawn
	// without replacement (stochastic gradient boosting; 1: all).
	Subsample float64
	Seed      uint64
}

// DefaultBoost is 300 trees of depth 4 at a learning rate of 0.05, each
// on 80 % of the rows: Friedman's stochastic gradient boosting with
// common settings for a few hundred to a few thousand rows.
func DefaultBoost(seed uint64) BoostConfig {
	return BoostConfig{Rounds: 300, LearnRate: 0.05, Tree: TreeConfig{MaxDepth: 4, MinLeaf: 2}, Subsample: 0.8, Seed: seed}
}

// Boost is a gradient-boosted regressor with squared loss: Init plus
// LearnRate times the sum of its trees.
type Boost struct {
	Init      float64 `json:"init"`
	LearnRate float64 `json:"learn_rate"`
	Trees     []Tree  `json:"trees"`
}

// Predict is the boosted sum at x.
func (b *Boost) Predict(x []float64) float64 {
	s := 0.0
	for i := range b.Trees {
		s += b.Trees[i].Predict(x)
	}
	return b.Init + b.LearnRate*s
}

// GrowBoost fits a boosted model: each round a tree (GrowTree) on the
// residuals of the model so far, over a subsample of the rows.
func GrowBoost(x [][]float64, y []float64, cfg BoostConfig) (*Boost, error) {
	if len(x) == 0 || len(x) != len(y) {
		return nil, fmt.Errorf("boost: %d rows and %d targets", len(x), len(y))
	}
	if cfg.Rounds < 1 || !(cfg.LearnRate > 0 && cfg.LearnRate <= 1) || !(cfg.Subsample > 0 && cfg.Subsample <= 1) {
		return nil, fmt.Errorf("boost: rounds %d, learning rate %v, subsample %v: want rounds >= 1, both fractions in (0, 1]", cfg.Rounds, cfg.LearnRate, cfg.Subsample)
	}
	b := &Boost{LearnRate: cfg.LearnRate, Trees: make([]Tree, 0, cfg.Rounds)}
	for _, v := range y {
		b.Init += v
	}
	b.Init /= float64(len(y))
	pred := make([]float64, len(y))
	for i := range pred {
		pred[i] = b.Init
	}
	res := make([]float64, len(y))
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x626f6f7374))
	k := max(1, int(cfg.Subsample*float64(len(y))+0.5))
	for range cfg.Rounds {
		for i := range res {
			res[i] = y[i] - pred[i]
		}
		rows := rng.Perm(len(y))[:k]
		t := GrowTree(x, res, rows, cfg.Tree, rng)
		for i := range pred {
			pred[i] += cfg.LearnRate * t.Predict(x[i])
		}
		b.Trees = append(b.Trees, t)
	}
	return b, nil
}
