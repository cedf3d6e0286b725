package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/data"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
)

// openEstimator is the predictor the placement uses: a model file, or
// the default model (predictor.DefaultKind) trained now on the built-in
// dataset; either way with its slice rule fitted to the built-in MIG
// slice runs, so that MIG decisions know a slice is slower than an MPS
// share of as many SMs.
//
// The built-in samples are those measured on the node's GPU model where
// mmk has them (data.SamplesFor: the H100 campaign on H100s), else the
// H200 dataset; a node of mixed models takes its first GPU's.
//
// offlinePriority is the MPS client priority offline jobs will run at:
// the estimator is told it before its slice rule is fitted.
//
// The model is cached in the data directory dir (predictor.CachedModel).
func openEstimator(c *configs.Config, backend partitioner.Backend, dir string, offlinePriority int, log *slog.Logger) (predictor.Estimator, error) {
	key := ""
	if inv, err := partitioner.ReadInventory(backend); err != nil {
		log.Warn("GPU model unknown: the predictor uses the H200 dataset", "err", err)
	} else if len(inv) > 0 {
		key = inv[0].Model
	}
	name, samples, err := data.SamplesFor(key)
	if err != nil {
		return predictor.Estimator{}, err
	}
	profiles := predictor.Profiles(samples)
	var est predictor.Estimator
	if c.Predictor.Model != "" {
		m, err := predictor.LoadModel(c.Predictor.Model)
		if err != nil {
			return predictor.Estimator{}, fmt.Errorf("predictor.model: %w", err)
		}
		est = predictor.Estimator{Model: m, Profiles: profiles}
	} else {
		// Trained once per dataset and build: later starts load the
		// cache in the data directory (training doubled restart to ready).
		m, err := predictor.CachedModel(filepath.Join(dir, predictor.CacheFile), samples, predictor.DefaultForest(0).Seed, trainModel, log)
		if err != nil {
			return predictor.Estimator{}, fmt.Errorf("train the predictor on the built-in dataset: %w", err)
		}
		est = predictor.Estimator{Model: m, Profiles: profiles}
		log.Info("predictor ready on the built-in dataset", "dataset", name, "gpu_model", key, "samples", len(samples), "types", len(profiles))
	}
	est.OfflinePriority = offlinePriority
	runs, err := data.SliceRuns()
	if err != nil {
		return predictor.Estimator{}, err
	}
	f, err := est.FitSlices(runs)
	if err != nil {
		// A model that cannot answer for the slice runs still places
		// jobs; slices are then taken as MPS shares of their SMs.
		log.Warn("predictor's MIG slice rule not fitted: a slice is taken as an MPS share of its SMs", "err", err)
		est.Slices = nil
		return est, nil
	}
	log.Info("predictor's MIG slice rule fitted", "runs", f.Runs, "weight", f.W, "error", f.MeanError, "error_as_mps_share", f.MPSShareError)
	return est, nil
}

// trainModel trains the predictor where its cache does not serve (a
// seam for tests, which count its calls).
var trainModel predictor.TrainFunc = predictor.TrainDefault

// openMPS is the MPS manager when MPS is on: mps.enabled true, or auto
// with the nvml backend and the control binary found.
func openMPS(c *configs.Config, backend partitioner.Backend, dir string, log *slog.Logger) (*mps.Manager, error) {
	control := c.MPS.Control
	if control == "" {
		control = "nvidia-cuda-mps-control"
	}
	_, lookErr := exec.LookPath(control)
	switch c.MPS.Enabled {
	case "false":
		return nil, nil
	case "auto":
		if backend.Name() != "nvml" || lookErr != nil {
			log.Info("MPS off (mps.enabled auto)", "backend", backend.Name(), "control", control, "found", lookErr == nil)
			return nil, nil
		}
	case "true":
		if lookErr != nil {
			return nil, fmt.Errorf("mps.enabled is true but %s is not found: %w", control, lookErr)
		}
	}
	m, err := mps.NewManager(mps.Options{Root: filepath.Join(dir, "mps"), Control: control, Logger: log})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// schedConfig is the kernel scheduling setup when it is on: enabled true,
// or auto with the hook library found.
func schedConfig(c *configs.Config, dir string, log *slog.Logger) (*node.SchedConfig, error) {
	hook := c.KernelSched.Hook
	if hook == "" {
		exe, err := os.Executable()
		if err == nil {
			hook = filepath.Join(filepath.Dir(exe), "libmmkhook.so")
		}
	}
	_, statErr := os.Stat(hook)
	switch c.KernelSched.Enabled {
	case "false":
		return nil, nil
	case "auto":
		if statErr != nil {
			log.Info("kernel scheduling off (kernelsched.enabled auto): no hook library", "hook", hook)
			return nil, nil
		}
	case "true":
		if statErr != nil {
			return nil, fmt.Errorf("kernelsched.enabled is true but the hook is missing: %w", statErr)
		}
	}
	abs, err := filepath.Abs(hook)
	if err != nil {
		return nil, fmt.Errorf("kernelsched.hook: %w", err)
	}
	return &node.SchedConfig{Policy: c.KernelSched.Policy, Hook: abs, Cupti: c.KernelSched.Cupti,
		SocketDir: filepath.Join(dir, "run"), ProfileDir: filepath.Join(dir, "profiles")}, nil
}
