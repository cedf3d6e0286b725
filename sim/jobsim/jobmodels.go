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
	Truth *SpeedModel
	Est   partitioner.Estimator
	// EstData names the samples Est was trained on.
	EstData string
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
func BuiltinModels(seed uint64) (*Models, error) { return BuiltinModelsFor(seed, "") }

// BuiltinModelsFor is BuiltinModels with the predictor trained on the
// built-in samples of the GPU model of key (data.SamplesFor: the H100
// campaign, which measured MPS client priority, for H100-80GB). The
// ground truth is the H200 dataset's whatever the key: it needs every
// job alone at 10, 20, ... 100 %, which only that dataset has.
func BuiltinModelsFor(seed uint64, key string) (*Models, error) {
	_, samples, err := data.Samples()
	if err != nil {
		return nil, err
	}
	estName, estSamples, err := data.SamplesFor(key)
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
	est, err := predictor.TrainEstimator(estSamples, seed)
	if err != nil {
		return nil, fmt.Errorf("job models: %s: %w", estName, err)
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
	return &Models{Truth: truth, Est: est, EstData: estName, Effects: effects, Fit: truth.Fit(), Restart: restart, Slices: truthSlices, EstSlices: estSlices}, nil
}

// withPriority is est asked about offline jobs at MPS client priority 1
// where the policy runs them there (a predictor.Estimator; others as
// they are). Models trained on samples without priorities ignore it.
func withPriority(est partitioner.Estimator, prio bool) partitioner.Estimator {
	if e, ok := est.(predictor.Estimator); ok && prio {
		e.OfflinePriority = 1
		return e
	}
	return est
}
