package predictor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/jsonread"
)

// CacheFile is the name of the trained model's cache in mmkd's data
// directory (CachedModel).
const CacheFile = "predictor-cache.json"

// modelCache is the cache file: the model and the key of what it was
// trained on.
type modelCache struct {
	Key   string          `json:"key"`
	Model json.RawMessage `json:"model"`
}

// TrainFunc trains mmk's default model on samples with seed.
type TrainFunc func(samples []Sample, seed uint64) (*Model, error)

// TrainDefault is the TrainFunc mmkd uses: DefaultKind, seeded.
func TrainDefault(samples []Sample, seed uint64) (*Model, error) {
	return Train(DefaultKind, samples, ForestConfig{Seed: seed})
}

// CacheKey is the hash of what a model is trained from: the samples,
// the seed, the model kind and this build's model format and version.
func CacheKey(samples []Sample, seed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %d %s %d\n", ModelFormat, ModelVersion, DefaultKind, seed)
	for _, s := range samples {
		fmt.Fprintf(h, "%#v\n", s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CachedModel returns the model trained on samples with seed: the one in
// the cache file at path when its key matches (CacheKey), else one
// trained by train, which it then writes there (atomically). A
// cache that cannot be read or decoded is logged and trained again; one
// that cannot be written is logged, and the model still returned.
func CachedModel(path string, samples []Sample, seed uint64, train TrainFunc, log *slog.Logger) (*Model, error) {
	key := CacheKey(samples, seed)
	m, err := loadCache(path, key)
	switch {
	case err == nil && m != nil:
		return m, nil
	case err != nil:
		log.Warn("predictor cache damaged: training again", "path", path, "err", err)
	}
	m, err = train(samples, seed)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(m)
	if err == nil {
		var data []byte
		data, err = json.Marshal(modelCache{Key: key, Model: raw})
		if err == nil {
			err = atomicfile.Write(path, data)
		}
	}
	if err != nil {
		log.Warn("predictor cache not written: the next start trains again", "path", path, "err", err)
	}
	return m, nil
}

// loadCache reads the cached model of key: nil and no error when there
// is none, or one of another key.
func loadCache(path, key string) (*Model, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read predictor cache: %w", err)
	}
	var c modelCache
	if err := jsonread.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode predictor cache: %w", err)
	}
	if c.Key != key {
		return nil, nil
	}
	m, err := readModel(c.Model)
	if err != nil {
		return nil, fmt.Errorf("predictor cache: %w", err)
	}
	return m, nil
}
