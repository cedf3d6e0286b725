package predictor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/jsonread"
)

// Model formats.
const (
	ModelFormat  = "mmk-predictor"
	ModelVersion = 1
)

// Model kinds.
const (
	KindForest = "random-forest"
	KindTree   = "tree"
	KindLinear = "linear"
	// KindBoost is gradient boosting (DefaultBoost, seeded like the
	// forest).
	KindBoost = "gradient-boosting"
	// KindPerType is one random forest per job type.
	KindPerType = "per-type-forest"
)

// kinds are the model kinds Train knows.
var kinds = []string{KindForest, KindBoost, KindPerType, KindLinear, KindTree}

// regressor predicts a log target from a feature row.
type regressor interface {
	Predict(x []float64) float64
}

// Model is a trained predictor with its feature schema.
type Model struct {
	Format  string   `json:"format"`
	Version int      `json:"version"`
	Kind    string   `json:"kind"`
	Schema  Schema   `json:"schema"`
	Forest  *Forest  `json:"forest,omitempty"`
	Tree    *Tree    `json:"tree,omitempty"`
	Linear  *Linear  `json:"linear,omitempty"`
	Boost   *Boost   `json:"boost,omitempty"`
	PerType *PerType `json:"per_type,omitempty"`
	// Trained says what the model learned from.
	Trained TrainInfo `json:"trained"`
}

// TrainInfo is a model's provenance.
type TrainInfo struct {
	Rows   int               `json:"rows"`
	Header map[string]string `json:"header,omitempty"`
	Params ForestConfig      `json:"params"`
}

// reg is the regressor Kind names (ReadModel checks it is the only one).
func (m *Model) reg() regressor {
	switch m.Kind {
	case KindForest:
		return m.Forest
	case KindTree:
		return m.Tree
	case KindBoost:
		return m.Boost
	case KindPerType:
		return m.PerType
	}
	return m.Linear
}

// Train fits a model of the given kind to samples.
func Train(kind string, samples []Sample, cfg ForestConfig) (*Model, error) {
	if len(samples) == 0 {
		return nil, errors.New("train: no samples")
	}
	schema := SchemaOf(samples)
	schema.CoIdentity = cfg.CoIdentity
	schema.Base = Bases(samples)
	for _, j := range schema.Jobs {
		if _, ok := schema.Base[j]; !ok {
			return nil, fmt.Errorf("train: job type %s has no run alone at 100 %% (its profile)", j)
		}
	}
	x, y, err := schema.Matrix(samples)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	m := &Model{Format: ModelFormat, Version: ModelVersion, Kind: kind, Schema: schema, Trained: TrainInfo{Rows: len(samples), Params: cfg}}
	switch kind {
	case KindForest:
		m.Forest, err = GrowForest(x, y, cfg)
	case KindTree:
		rows := make([]int, len(x))
		for i := range rows {
			rows[i] = i
		}
		t := GrowTree(x, y, rows, TreeConfig{MaxDepth: cfg.Tree.MaxDepth, MinLeaf: cfg.Tree.MinLeaf}, nil)
		m.Forest, m.Tree = nil, &t
	case KindLinear:
		m.Linear, err = FitLinear(x, y)
	case KindBoost:
		m.Boost, err = GrowBoost(x, y, DefaultBoost(cfg.Seed))
	case KindPerType:
		m.PerType, err = GrowPerType(x, y, len(schema.Jobs), cfg)
	default:
		return nil, fmt.Errorf("train: model kind %q is not one of %s", kind, strings.Join(kinds, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return m, nil
}

// Predict is the model's estimate for an input, in the target's units
// (ms for online jobs, items/s for offline jobs).
func (m *Model) Predict(in Input) (float64, error) {
	v, err := m.Schema.Vector(in)
	if err != nil {
		return 0, err
	}
	return math.Exp(m.Schema.sign(in.Job)*m.reg().Predict(v) + m.Schema.Base[in.Job]), nil
}

// Save writes the model as JSON, atomically.
func (m *Model) Save(path string) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// LoadModel reads and validates a model file.
func LoadModel(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := ReadModel(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

// ReadModel decodes and validates a model: its format and version, its
// schema against this build's features, and every tree's node indices.
func ReadModel(r io.Reader) (*Model, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	return m.checked()
}

// readModel is ReadModel of data, which holds the model and nothing
// after it, in half the time (jsonread): a start reads its cached model.
func readModel(data []byte) (*Model, error) {
	var m Model
	if err := jsonread.UnmarshalKnown(data, &m); err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	return m.checked()
}

// checked is m once its format, version, schema and trees are found
// valid.
func (m Model) checked() (*Model, error) {
	switch {
	case m.Format != ModelFormat:
		return nil, fmt.Errorf("format: %q is not %q", m.Format, ModelFormat)
	case m.Version != ModelVersion:
		return nil, fmt.Errorf("version: %d is not supported (this build reads %d)", m.Version, ModelVersion)
	case len(m.Schema.Jobs) == 0 || !slices.IsSorted(m.Schema.Jobs) || len(slices.Compact(slices.Clone(m.Schema.Jobs))) != len(m.Schema.Jobs):
		return nil, errors.New("schema.jobs: empty, not sorted or with a job twice")
	case !slices.Contains(kinds, m.Kind):
		return nil, fmt.Errorf("kind: %q is not one of %s", m.Kind, strings.Join(kinds, ", "))
	case (m.Forest != nil) != (m.Kind == KindForest) || (m.Tree != nil) != (m.Kind == KindTree) || (m.Linear != nil) != (m.Kind == KindLinear) ||
		(m.Boost != nil) != (m.Kind == KindBoost) || (m.PerType != nil) != (m.Kind == KindPerType):
		return nil, fmt.Errorf("kind %q: the file must hold that model and no other", m.Kind)
	}
	want := NewSchema(m.Schema.Jobs, m.Schema.extended())
	if err := m.Schema.Check(want); err != nil {
		return nil, err
	}
	for _, j := range m.Schema.Jobs {
		if b, ok := m.Schema.Base[j]; !ok || math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("schema.base_log_target: job type %s has no finite base", j)
		}
	}
	nf := len(m.Schema.Features())
	switch m.Kind {
	case KindForest:
		if m.Forest == nil || len(m.Forest.Trees) == 0 {
			return nil, errors.New("forest: no trees")
		}
		for i := range m.Forest.Trees {
			if err := m.Forest.Trees[i].validate(nf); err != nil {
				return nil, fmt.Errorf("forest.trees[%d]: %w", i, err)
			}
		}
	case KindTree:
		if m.Tree == nil {
			return nil, errors.New("tree: missing")
		}
		if err := m.Tree.validate(nf); err != nil {
			return nil, fmt.Errorf("tree: %w", err)
		}
	case KindLinear:
		if len(m.Linear.Coef) != nf+1 {
			return nil, fmt.Errorf("linear: want %d coefficients", nf+1)
		}
	case KindBoost:
		if len(m.Boost.Trees) == 0 || math.IsNaN(m.Boost.Init) || math.IsInf(m.Boost.Init, 0) || !(m.Boost.LearnRate > 0 && m.Boost.LearnRate <= 1) {
			return nil, errors.New("boost: no trees, or init or learning rate out of range")
		}
		for i := range m.Boost.Trees {
			if err := m.Boost.Trees[i].validate(nf); err != nil {
				return nil, fmt.Errorf("boost.trees[%d]: %w", i, err)
			}
		}
	case KindPerType:
		if err := m.PerType.validate(len(m.Schema.Jobs), nf); err != nil {
			return nil, fmt.Errorf("per_type: %w", err)
		}
	}
	return &m, nil
}

// validate checks that every inner node names a feature and two later
// nodes, so Predict terminates and never indexes out of range.
func (t *Tree) validate(features int) error {
	if len(t.Nodes) == 0 {
		return errors.New("no nodes")
	}
	for i, n := range t.Nodes {
		if math.IsNaN(n.Value) || math.IsInf(n.Value, 0) {
			return fmt.Errorf("nodes[%d].v: %v", i, n.Value)
		}
		if n.Feature < 0 {
			continue
		}
		if n.Feature >= features {
			return fmt.Errorf("nodes[%d].f: feature %d of %d", i, n.Feature, features)
		}
		if int(n.Left) <= i || int(n.Right) <= i || int(n.Left) >= len(t.Nodes) || int(n.Right) >= len(t.Nodes) {
			return fmt.Errorf("nodes[%d]: children %d and %d must come after it, below %d", i, n.Left, n.Right, len(t.Nodes))
		}
	}
	return nil
}
