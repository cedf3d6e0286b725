package predictor

import "fmt"

// PerType is one forest per job type: a row goes to the forest of the
// job type its one-hot columns name. A job type with no rows but its
// profile predicts its profile (a log ratio of 0).
type PerType struct {
	// Forests are indexed like Schema.Jobs; Jobs is their count (the
	// one-hot columns come first in a row).
	Forests []Forest `json:"forests"`
}

// Predict asks the forest of x's job type.
func (p *PerType) Predict(x []float64) float64 {
	for i := range p.Forests {
		if x[i] == 1 {
			return p.Forests[i].Predict(x)
		}
	}
	return 0
}

// GrowPerType fits a forest per job type (jobs: the schema's job types,
// whose one-hot columns lead each row) on that type's rows.
func GrowPerType(x [][]float64, y []float64, jobs int, cfg ForestConfig) (*PerType, error) {
	if len(x) == 0 || len(x) != len(y) {
		return nil, fmt.Errorf("per-type: %d rows and %d targets", len(x), len(y))
	}
	p := &PerType{Forests: make([]Forest, jobs)}
	for j := range jobs {
		var xs [][]float64
		var ys []float64
		for i, row := range x {
			if row[j] == 1 {
				xs, ys = append(xs, row), append(ys, y[i])
			}
		}
		if len(xs) == 0 {
			p.Forests[j] = Forest{Trees: []Tree{{Nodes: []Node{{Feature: -1}}}}}
			continue
		}
		c := cfg
		c.Seed = cfg.Seed + uint64(j)*0x9e3779b9
		f, err := GrowForest(xs, ys, c)
		if err != nil {
			return nil, fmt.Errorf("per-type: job %d: %w", j, err)
		}
		p.Forests[j] = *f
	}
	return p, nil
}

// validate checks the forests against the schema's job types and
// features.
func (p *PerType) validate(jobs, features int) error {
	if len(p.Forests) != jobs {
		return fmt.Errorf("%d forests for %d job types", len(p.Forests), jobs)
	}
	for j := range p.Forests {
		if len(p.Forests[j].Trees) == 0 {
			return fmt.Errorf("forests[%d]: no trees", j)
		}
		for i := range p.Forests[j].Trees {
			if err := p.Forests[j].Trees[i].validate(features); err != nil {
				return fmt.Errorf("forests[%d].trees[%d]: %w", j, i, err)
			}
		}
	}
	return nil
}
