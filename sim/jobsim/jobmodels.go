package jobsim

import (
	"fmt"

	"github.com/mmkgpu/mmk/data"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
)

// Models are what a job-level simulation needs besides its trace: the
// ground truth, the predictor the policies decide with, and the kernel
// scheduler's measured effects.
type Models struct {
	Truth   *SpeedModel
	Est     partitioner.Estimator
	Effects []KernelEffect
	// Fit is how well the ground truth reproduces the measured
	// co-located runs.
	Fit Fit
	// Restart is the table of measured checkpoint costs.
	Restart RestartCosts
	// Slices is how well the ground truth's MIG rule reproduces the
	// measured slice runs, EstSlices the predictor's (data.SliceRuns).
	Slices    SliceFit
	EstSlices predictor.SliceFit
}

// BuiltinModels builds the job models from the built-in H200 dataset:
// the ground truth from its measurements, mmk's default model
// (predictor.DefaultKind) trained on all of it with the given seed, the
// kernel effects and the checkpoint costs.
func BuiltinModels(seed uint64) (*Models, error) {
	_, samples, err := data.Samples()
	if err != nil {
		return nil, err
	}
	truth, err := NewSpeedModel(samples)
	if err != nil {
		return nil, err
	}
	slices, err := data.SliceRuns()
	if err != nil {
		return nil, fmt.Errorf("job models: %w", err)
	}
	truthSlices := truth.FitSlices(slices)
	est, err := predictor.TrainEstimator(samples, seed)
	if err != nil {
		return nil, fmt.Errorf("job models: %w", err)
	}
	estSlices, err := est.FitSlices(slices)
	if err != nil {
		return nil, fmt.Errorf("job models: %w", err)
	}
	effects, err := KernelEffects()
	if err != nil {
		return nil, err
	}
	restart, err := BuiltinRestartCosts()
	if err != nil {
		return nil, err
	}
	return &Models{Truth: truth, Est: est, Effects: effects, Fit: truth.Fit(), Restart: restart, Slices: truthSlices, EstSlices: estSlices}, nil
}
