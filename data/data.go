// Package data ships mmk's measured datasets inside its binaries: the
// profiling samples of MMK Table III's jobs on the H200 that the predictor
// trains on and the job-level simulator takes its ground truth from, and
// the published runs of jobs alone in MIG slices that both learn a
// slice's speed from.
package data

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
)

// ProfilesName is the built-in dataset's file under data/profiles.
const ProfilesName = "profiles/h200-2026-11-22.csv"

//go:embed profiles/h200-2026-11-22.csv
var profilesCSV []byte

// H100ProfilesName is the H100 profiling campaign's file under
// data/profiles: repetitions and MPS client priorities measured.
const H100ProfilesName = "profiles/h100-2026-11-25.csv"

//go:embed profiles/h100-2026-11-25.csv
var h100ProfilesCSV []byte

// SamplesFor reads the built-in samples measured on the GPU model of key
// (partitioner.Model.Key): the H100 campaign for H100-80GB, the H200
// dataset (Samples) for every other model, the nearest mmk has.
func SamplesFor(key string) (string, []predictor.Sample, error) {
	if key != "H100-80GB" {
		_, s, err := Samples()
		return ProfilesName, s, err
	}
	_, s, err := predictor.ReadSamples(bytes.NewReader(h100ProfilesCSV))
	if err != nil {
		return "", nil, fmt.Errorf("built-in dataset %s: %w", H100ProfilesName, err)
	}
	return H100ProfilesName, s, nil
}

// Samples reads the built-in profiling dataset.
func Samples() (predictor.Header, []predictor.Sample, error) {
	h, s, err := predictor.ReadSamples(bytes.NewReader(profilesCSV))
	if err != nil {
		return nil, nil, fmt.Errorf("built-in dataset %s: %w", ProfilesName, err)
	}
	return h, s, nil
}

// SliceRunsName is the built-in file of measured MIG slice runs.
const SliceRunsName = "slices/mig-a100-miger.csv"

//go:embed slices/mig-a100-miger.csv
var sliceRunsCSV []byte

// SliceRuns reads the built-in MIG slice runs (MIGER's A100-80GB
// profiles: one job per slice; the file names its source).
func SliceRuns() ([]predictor.SliceRun, error) {
	m, err := partitioner.LookupModel("A100-80GB")
	if err != nil {
		return nil, err
	}
	runs, err := predictor.ParseSliceRuns(bytes.NewReader(sliceRunsCSV), m)
	if err != nil {
		return nil, fmt.Errorf("built-in %s: %w", SliceRunsName, err)
	}
	return runs, nil
}
