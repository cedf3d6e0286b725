package predictor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sjwhitworth/golearn/base"
	"github.com/sjwhitworth/golearn/trees"
)

// randomData is n rows of p uniform features with a nonlinear target.
func randomData(n, p int, seed uint64) ([][]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, p)
		for j := range x[i] {
			x[i][j] = rng.Float64() * 10
		}
		y[i] = math.Sin(x[i][0]) + x[i][1]*x[i][1]/10 + 0.1*rng.NormFloat64()
		if p > 2 {
			y[i] += 0.3 * x[i][2]
		}
	}
	return x, y
}

func golearnInstances(t *testing.T, x [][]float64, y []float64) *base.DenseInstances {
	t.Helper()
	inst := base.NewDenseInstances()
	specs := make([]base.AttributeSpec, len(x[0]))
	for j := range specs {
		specs[j] = inst.AddAttribute(base.NewFloatAttribute(fmt.Sprintf("x%d", j)))
	}
	cls := base.NewFloatAttribute("y")
	yspec := inst.AddAttribute(cls)
	if err := inst.AddClassAttribute(cls); err != nil {
		t.Fatal(err)
	}
	if err := inst.Extend(len(x)); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		for j, v := range x[i] {
			inst.Set(specs[j], i, base.PackFloatToBytes(v))
		}
		inst.Set(yspec, i, base.PackFloatToBytes(y[i]))
	}
	return inst
}

// TestTreeMatchesGolearn: one of our trees, without bootstrap or feature
// sampling, predicts what golearn's CART regressor predicts on the same
// data and depth. When two features split a node into the very same two
// sides, the losses tie exactly and golearn's choice falls to rounding in
// its sums (we take the first feature); the cases keep every node large
// enough (tens of rows) that such ties do not arise.
func TestTreeMatchesGolearn(t *testing.T) {
	for _, tc := range []struct {
		n, p, depth int
	}{{60, 3, 2}, {600, 3, 4}, {1500, 4, 5}} {
		x, y := randomData(tc.n, tc.p, uint64(tc.n))
		rows := make([]int, len(x))
		for i := range rows {
			rows[i] = i
		}
		ours := GrowTree(x, y, rows, TreeConfig{MaxDepth: tc.depth}, nil)
		theirs := trees.NewDecisionTreeRegressor("mse", int64(tc.depth))
		train := golearnInstances(t, x, y)
		if err := theirs.Fit(train); err != nil {
			t.Fatal(err)
		}
		tx, ty := randomData(100, tc.p, 999)
		want := theirs.Predict(golearnInstances(t, tx, ty))
		for i := range tx {
			if got := ours.Predict(tx[i]); math.Abs(got-want[i]) > 1e-9 {
				t.Fatalf("n=%d p=%d depth=%d row %d: ours %v, golearn %v", tc.n, tc.p, tc.depth, i, got, want[i])
			}
		}
	}
}

func TestTreeFitsExactlyWithoutLimits(t *testing.T) {
	x, y := randomData(50, 2, 3)
	rows := make([]int, len(x))
	for i := range rows {
		rows[i] = i
	}
	tr := GrowTree(x, y, rows, TreeConfig{}, nil)
	for i := range x {
		if got := tr.Predict(x[i]); got != y[i] {
			t.Fatalf("row %d: %v, want %v (distinct rows are fitted exactly)", i, got, y[i])
		}
	}
	if err := tr.validate(2); err != nil {
		t.Fatal(err)
	}
}

func TestForestIsDeterministicAndBeatsATree(t *testing.T) {
	x, y := randomData(400, 4, 1)
	tx, ty := randomData(200, 4, 2)
	cfg := ForestConfig{Trees: 60, Tree: TreeConfig{MaxFeatures: 2}, Seed: 5}
	a, err := GrowForest(x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel = 1
	b, _ := GrowForest(x, y, cfg)
	rows := make([]int, len(x))
	for i := range rows {
		rows[i] = i
	}
	single := GrowTree(x, y, rows, TreeConfig{}, nil)
	var errForest, errTree float64
	for i := range tx {
		if a.Predict(tx[i]) != b.Predict(tx[i]) {
			t.Fatal("the same seed gave different forests with 1 and many workers")
		}
		errForest += math.Abs(a.Predict(tx[i]) - ty[i])
		errTree += math.Abs(single.Predict(tx[i]) - ty[i])
	}
	if errForest >= errTree {
		t.Fatalf("forest error %v is not below a single tree's %v", errForest, errTree)
	}
}

// TestTreeSplitsNeighbouringFloats: halfway between two neighbouring
// floats rounds to the lower one; the split must still separate them
// (it once recursed on the same rows until the stack overflowed).
func TestTreeSplitsNeighbouringFloats(t *testing.T) {
	x := [][]float64{{1}, {math.Nextafter(1, 2)}}
	y := []float64{1, 2}
	tr := GrowTree(x, y, []int{0, 1}, TreeConfig{}, nil)
	if len(tr.Nodes) != 3 || tr.Predict(x[0]) != 1 || tr.Predict(x[1]) != 2 {
		t.Fatalf("tree %+v", tr.Nodes)
	}
}

func TestLinearRecoversCoefficients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, 100)
	y := make([]float64, 100)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64()}
		y[i] = 3 + 2*x[i][0] - 5*x[i][1]
	}
	l, err := FitLinear(x, y)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{3, 2, -5} {
		if math.Abs(l.Coef[i]-want) > 1e-4 {
			t.Fatalf("coef %d = %v, want %v", i, l.Coef[i], want)
		}
	}
}

// BenchmarkTrainForest1400 trains the forest on 1,400 rows of 27
// features (the size of a campaign's dataset).
func BenchmarkTrainForest1400(b *testing.B) {
	x, y := randomData(1400, 27, 1)
	cfg := DefaultForest(27)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GrowForest(x, y, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrainBoost1400 trains the default model, gradient boosting, on
// the same rows as BenchmarkTrainForest1400.
func BenchmarkTrainBoost1400(b *testing.B) {
	x, y := randomData(1400, 27, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GrowBoost(x, y, DefaultBoost(1)); err != nil {
			b.Fatal(err)
		}
	}
}
