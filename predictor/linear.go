package predictor

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Linear is a linear regression: Coef[0] is the intercept.
type Linear struct {
	Coef []float64 `json:"coef"`
}

// Predict is the intercept plus the weighted features.
func (l *Linear) Predict(x []float64) float64 {
	v := l.Coef[0]
	for i, c := range l.Coef[1:] {
		v += c * x[i]
	}
	return v
}

// FitLinear fits least squares with a tiny ridge term (1e-6), which keeps
// the one-hot job columns, collinear with the intercept, solvable.
func FitLinear(x [][]float64, y []float64) (*Linear, error) {
	if len(x) == 0 || len(x) != len(y) {
		return nil, fmt.Errorf("linear: %d rows and %d targets", len(x), len(y))
	}
	p := len(x[0]) + 1
	a := mat.NewDense(len(x), p, nil)
	for i, row := range x {
		a.Set(i, 0, 1)
		for j, v := range row {
			a.Set(i, j+1, v)
		}
	}
	var ata mat.Dense
	ata.Mul(a.T(), a)
	for i := range p {
		ata.Set(i, i, ata.At(i, i)+1e-6)
	}
	var aty mat.VecDense
	aty.MulVec(a.T(), mat.NewVecDense(len(y), y))
	var coef mat.VecDense
	if err := coef.SolveVec(&ata, &aty); err != nil {
		return nil, fmt.Errorf("linear: %w", err)
	}
	return &Linear{Coef: coef.RawVector().Data}, nil
}
