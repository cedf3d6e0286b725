package predictor

import (
	"cmp"
	"math/rand/v2"
	"slices"
)

// Node is one node of a regression tree. A leaf has Feature -1; an inner
// node sends x to Left when x[Feature] < Threshold, else to Right.
type Node struct {
	Feature   int     `json:"f"`
	Threshold float64 `json:"t,omitempty"`
	Left      int32   `json:"l,omitempty"`
	Right     int32   `json:"r,omitempty"`
	Value     float64 `json:"v"`
}

// Tree is a CART regression tree, nodes in an array, root first.
type Tree struct {
	Nodes []Node `json:"nodes"`
}

// Predict walks x down the tree.
func (t *Tree) Predict(x []float64) float64 {
	n := &t.Nodes[0]
	for n.Feature >= 0 {
		if x[n.Feature] < n.Threshold {
			n = &t.Nodes[n.Left]
		} else {
			n = &t.Nodes[n.Right]
		}
	}
	return n.Value
}

// TreeConfig bounds a tree's growth.
type TreeConfig struct {
	// MaxDepth is the most split levels (0: unlimited).
	MaxDepth int
	// MinLeaf is the fewest rows a leaf may hold (0 means 1).
	MinLeaf int
	// MaxFeatures is how many features, drawn at random, each split
	// considers (0: all, in order).
	MaxFeatures int
}

// grower grows one tree over rows of x.
type grower struct {
	x     [][]float64
	y     []float64
	cfg   TreeConfig
	rng   *rand.Rand
	nodes []Node
	feats []int
	pairs []pair
}

// pair is a row's feature value and its target's deviation from the
// node's mean.
type pair struct{ v, d float64 }

// GrowTree fits a CART regression tree with squared error to the rows of
// x and y named by rows (repeats allowed: a bootstrap sample). The split
// of a node is the (feature, threshold) with the smallest summed squared
// error of the two sides, thresholds halfway between consecutive distinct
// values, ties to the first feature and the lowest threshold; a node
// stays a leaf when no split lowers the error, it is pure, or a bound is
// reached. rng draws the features of each split when MaxFeatures is set
// (then ties go to the first feature drawn).
func GrowTree(x [][]float64, y []float64, rows []int, cfg TreeConfig, rng *rand.Rand) Tree {
	if cfg.MinLeaf < 1 {
		cfg.MinLeaf = 1
	}
	g := &grower{x: x, y: y, cfg: cfg, rng: rng}
	if len(x) > 0 {
		g.feats = make([]int, len(x[0]))
		for i := range g.feats {
			g.feats[i] = i
		}
	}
	rows = slices.Clone(rows)
	g.grow(rows, 1)
	return Tree{Nodes: g.nodes}
}

// grow adds the node for rows and returns its index.
func (g *grower) grow(rows []int, depth int) int32 {
	idx := int32(len(g.nodes))
	mean, sse := meanSSE(g.y, rows)
	g.nodes = append(g.nodes, Node{Feature: -1, Value: mean})
	if (g.cfg.MaxDepth > 0 && depth > g.cfg.MaxDepth) || len(rows) < 2*g.cfg.MinLeaf || sse <= 0 {
		return idx
	}
	f, thr, ok := g.bestSplit(rows, mean, sse)
	if !ok {
		return idx
	}
	// Partition rows: those below the threshold first.
	i, j := 0, len(rows)-1
	for i <= j {
		if g.x[rows[i]][f] < thr {
			i++
		} else {
			rows[i], rows[j] = rows[j], rows[i]
			j--
		}
	}
	if i == 0 || i == len(rows) {
		return idx // cannot happen with midpoint; never recurse on the same rows
	}
	left := g.grow(rows[:i], depth+1)
	right := g.grow(rows[i:], depth+1)
	g.nodes[idx] = Node{Feature: f, Threshold: thr, Left: left, Right: right, Value: mean}
	return idx
}

// midpoint is a threshold between lo < hi that sends lo left and hi
// right: halfway, or hi itself when lo and hi are neighbouring floats and
// halfway rounds to lo.
func midpoint(lo, hi float64) float64 {
	if m := lo + (hi-lo)/2; m > lo {
		return m
	}
	return hi
}

// meanSSE is the mean of y over rows and the sum of squared deviations.
func meanSSE(y []float64, rows []int) (mean, sse float64) {
	for _, r := range rows {
		mean += y[r]
	}
	mean /= float64(len(rows))
	for _, r := range rows {
		d := y[r] - mean
		sse += d * d
	}
	return mean, sse
}

// bestSplit scans the candidate features for the split that lowers the
// squared error the most.
func (g *grower) bestSplit(rows []int, mean, nodeSSE float64) (feature int, threshold float64, ok bool) {
	// With MaxFeatures, features are drawn in random order until that
	// many that vary in this node were tried (as scikit-learn does): a
	// draw of constant columns (a one-hot job column inside one job's
	// node) would otherwise end the tree early.
	feats := g.feats
	limit := len(feats)
	if m := g.cfg.MaxFeatures; m > 0 && m < len(feats) {
		g.rng.Shuffle(len(feats), func(i, j int) { feats[i], feats[j] = feats[j], feats[i] })
		limit = m
	} else {
		slices.Sort(feats)
	}
	tried := 0
	best := nodeSSE
	// Two splits that make the same two sides tie; rounding in the sums
	// must not break the tie, so a later candidate has to be better by
	// more than a relative 1e-9 (ties go to the first feature, lowest
	// threshold, as in golearn's CART).
	tol := 1e-9 * nodeSSE
	n := len(rows)
	var total, totalSq float64 // of y - mean: less cancellation
	for _, r := range rows {
		d := g.y[r] - mean
		total += d
		totalSq += d * d
	}
	for _, f := range feats {
		if tried == limit {
			break
		}
		pairs := g.pairs[:0]
		for _, r := range rows {
			pairs = append(pairs, pair{g.x[r][f], g.y[r] - mean})
		}
		g.pairs = pairs
		slices.SortFunc(pairs, func(a, b pair) int { return cmp.Compare(a.v, b.v) })
		if pairs[0].v == pairs[n-1].v {
			continue // constant here: does not count
		}
		tried++
		var sum, sq float64
		for i := 1; i < n; i++ {
			d := pairs[i-1].d
			sum += d
			sq += d * d
			lo, hi := pairs[i-1].v, pairs[i].v
			if lo == hi || i < g.cfg.MinLeaf || n-i < g.cfg.MinLeaf {
				continue
			}
			nl, nr := float64(i), float64(n-i)
			sse := (sq - sum*sum/nl) + ((totalSq - sq) - (total-sum)*(total-sum)/nr)
			if sse < best-tol {
				best, feature, threshold, ok = sse, f, midpoint(lo, hi), true
			}
		}
	}
	return feature, threshold, ok
}
