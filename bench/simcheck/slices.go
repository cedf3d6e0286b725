package main

import (
	"bytes"
	"fmt"
	"math"

	"github.com/mmkgpu/mmk/data"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// slicesCheck writes how the ground truth and the predictor take a MIG
// slice against the published runs of jobs alone in A100 slices: per
// profile, the measured speed over the whole GPU without MIG, the rule
// that takes a slice as an MPS share of its SMs, and the fitted rules.
func slicesCheck(b *bytes.Buffer, models *jobsim.Models) error {
	runs, err := data.SliceRuns()
	if err != nil {
		return err
	}
	tf, ef := models.Slices, models.EstSlices
	fmt.Fprintf(b, "## MIG slices\n\n`%s`: %d runs of one job alone in each slice of an A100-80GB (MIGER's published profiles, 8 models standing for mmk job types), speed over the same job on the whole GPU without MIG. A slice has its share of the SMs and also of the L2 and the memory system; an MPS share of as many SMs shares the whole of both. The rule before this check took a slice as an MPS share of its SMs; both the ground truth and the predictor now take the geometric blend of that and the whole GPU scaled to the slice's SMs (`predictor.SliceBlend`), the weight of the MPS share fitted to these runs: ground truth %.2f, predictor %.2f. The memory bandwidth share alone explains none of it: in %d of %d runs the job's DRAM use at the slice's SMs (its measured H200 curve) exceeds the slice's share of the memory system.\n\n", data.SliceRunsName, len(runs), tf.W, ef.W, tf.BandwidthBound, tf.Runs)
	fmt.Fprintf(b, "Mean relative error over the runs: ground truth %.1f %% (as an MPS share: %.1f %%), predictor %.1f %% (as an MPS share: %.1f %%).\n\n", 100*tf.MeanError, 100*tf.MPSShareError, 100*ef.MeanError, 100*ef.MPSShareError)
	b.WriteString("| slice | SMs | runs | measured | as an MPS share (truth) | ground truth | predictor |\n|---|---|---|---|---|---|---|\n")
	type row struct {
		n                         int
		sms                       int
		meas, mps, truth, predict float64
	}
	var order []string
	rows := map[string]*row{}
	for _, r := range runs {
		x := rows[r.Slice]
		if x == nil {
			x = &row{sms: r.SMs}
			rows[r.Slice] = x
			order = append(order, r.Slice)
		}
		p, err := models.Est.Speed(partitioner.Job{Type: r.Type, Online: predictor.KindOf(r.Type) == predictor.Online}, r.SMs, r.GPUSMs, 100, nil)
		if err != nil {
			return fmt.Errorf("slices: %w", err)
		}
		x.n++
		x.meas += r.Speed
		x.mps += models.Truth.Alone(r.Type, 100*r.SMShare)
		x.truth += models.Truth.InSlice(r.Type, r.SMShare)
		x.predict += p
	}
	for _, s := range order {
		x := rows[s]
		n := float64(x.n)
		rel := func(v float64) string { return fmt.Sprintf("%.3f (%+.0f %%)", v/n, 100*(v/x.meas-1)) }
		fmt.Fprintf(b, "| %s | %d | %d | %.3f | %s | %s | %s |\n", s, x.sms, x.n, x.meas/n, rel(x.mps), rel(x.truth), rel(x.predict))
	}
	if math.IsNaN(tf.MeanError) {
		return fmt.Errorf("slices: no fit")
	}
	b.WriteString("\nMeans over the runs of each slice; in brackets the mean's error against the measured mean. The simulator's MIG policies run on this rule; its slices are still otherwise isolated (no interference across instances).\n\n")
	return nil
}
