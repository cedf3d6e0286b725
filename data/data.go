// Package data ships mmk's measured datasets inside its binaries: the
// profiling samples of MMK Table III's jobs on the H200 that the predictor
// trains on and the job-level simulator takes its ground truth from.
package data

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/mmkgpu/mmk/predictor"
)

// ProfilesName is the built-in dataset's file under data/profiles.
const ProfilesName = "profiles/h200-2026-11-22.csv"

//go:embed profiles/h200-2026-11-22.csv
var profilesCSV []byte

// Samples reads the built-in profiling dataset.
func Samples() (predictor.Header, []predictor.Sample, error) {
	h, s, err := predictor.ReadSamples(bytes.NewReader(profilesCSV))
	if err != nil {
		return nil, nil, fmt.Errorf("built-in dataset %s: %w", ProfilesName, err)
	}
	return h, s, nil
}
