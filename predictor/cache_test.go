package predictor

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelCache (issue 38, restart): the trained model is kept in the
// data directory, keyed by a hash of its training data and
// configuration: a second start loads it (the train function is not
// called), changed data or a changed seed retrains, and a damaged cache
// is logged and retrained. Before, every start trained (restart to ready
// 0.40-0.82 s).
func TestModelCache(t *testing.T) {
	samples := synthSamples(200, 2)
	changed := append([]Sample(nil), samples...)
	changed[0].IterMs *= 1.5
	changed[0].ItemsPerS *= 1.5
	path := filepath.Join(t.TempDir(), "predictor.cache.json")
	trains := 0
	train := func(s []Sample, seed uint64) (*Model, error) {
		trains++
		return Train(DefaultKind, s, ForestConfig{Seed: seed})
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	steps := []struct {
		name    string
		before  func()
		samples []Sample
		seed    uint64
		trains  int // the train function's calls so far
		logged  string
	}{
		{"first start trains", nil, samples, 1, 1, ""},
		{"second start loads", nil, samples, 1, 1, ""},
		{"changed data retrains", nil, changed, 1, 2, ""},
		{"changed seed retrains", nil, changed, 2, 3, ""},
		{"a damaged cache retrains", func() {
			b, _ := os.ReadFile(path)
			_ = os.WriteFile(path, b[:len(b)/2], 0o600)
		}, changed, 2, 4, "damaged"},
		{"and is whole again", nil, changed, 2, 4, ""},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		logs.Reset()
		m, err := CachedModel(path, st.samples, st.seed, train, log)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if m == nil || m.Schema.Base == nil {
			t.Fatalf("%s: no model", st.name)
		}
		if trains != st.trains {
			t.Errorf("%s: trained %d times, want %d", st.name, trains, st.trains)
		}
		if st.logged != "" && !strings.Contains(logs.String(), st.logged) {
			t.Errorf("%s: log %q does not say %q", st.name, logs.String(), st.logged)
		}
	}
}
