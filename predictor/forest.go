package predictor

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// ForestConfig configures a random forest.
type ForestConfig struct {
	Trees int
	Tree  TreeConfig
	// Seed makes the forest deterministic: tree i draws from its own
	// stream, whatever the order trees are built in.
	Seed uint64
	// Parallel is how many trees grow at once (0: GOMAXPROCS).
	Parallel int
	// CoIdentity adds a feature per job type counting the co-runners of
	// that type (Schema.CoIdentity); a feature option, kept with the
	// hyper-parameters so that a model records how it was trained.
	CoIdentity bool `json:",omitempty"`
}

// DefaultForest is 100 trees of unlimited depth, each split drawing a
// third of the features (Breiman's choice for regression).
func DefaultForest(features int) ForestConfig {
	return ForestConfig{Trees: 100, Tree: TreeConfig{MinLeaf: 1, MaxFeatures: max(1, features/3)}, Seed: 1}
}

// Forest is a random-forest regressor: the mean of its trees.
type Forest struct {
	Trees []Tree `json:"trees"`
}

// Predict is the mean prediction of the trees.
func (f *Forest) Predict(x []float64) float64 {
	var s float64
	for i := range f.Trees {
		s += f.Trees[i].Predict(x)
	}
	return s / float64(len(f.Trees))
}

// GrowForest fits a forest: each tree on a bootstrap sample of the rows,
// each split on a random subset of the features.
func GrowForest(x [][]float64, y []float64, cfg ForestConfig) (*Forest, error) {
	if len(x) == 0 || len(x) != len(y) {
		return nil, fmt.Errorf("forest: %d rows and %d targets", len(x), len(y))
	}
	if cfg.Trees < 1 {
		return nil, fmt.Errorf("forest: %d trees must be at least 1", cfg.Trees)
	}
	par := cfg.Parallel
	if par < 1 {
		par = runtime.GOMAXPROCS(0)
	}
	f := &Forest{Trees: make([]Tree, cfg.Trees)}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(par, cfg.Trees) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
				rows := make([]int, len(x))
				for j := range rows {
					rows[j] = rng.IntN(len(x))
				}
				f.Trees[i] = GrowTree(x, y, rows, cfg.Tree, rng)
			}
		}()
	}
	for i := range cfg.Trees {
		next <- i
	}
	close(next)
	wg.Wait()
	return f, nil
}
