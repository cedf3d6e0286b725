package predictor

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/mmkgpu/mmk/partitioner"
)

// SliceRun is one job alone in a MIG slice, measured: its speed there
// over its speed alone on the whole GPU without MIG.
type SliceRun struct {
	Model, Type string
	Slice       string
	// SMs and GPUSMs are the slice's SMs and the GPU's; SMShare and
	// MemShare the slice's SMs and memory over the GPU's.
	SMs, GPUSMs       int
	SMShare, MemShare float64
	Speed             float64
}

// ParseSliceRuns reads slice runs: CSV lines model,type,online,slice,
// seconds ('#' lines are comments, the first other line the header),
// each model with one "baseline" line (the whole GPU without MIG) and
// lines of model's profiles; a run's speed is the baseline's seconds
// over its own.
func ParseSliceRuns(r io.Reader, model *partitioner.Model) ([]SliceRun, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 5
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("slice runs: %w", err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != "model,type,online,slice,seconds" {
		return nil, fmt.Errorf("slice runs: want the header model,type,online,slice,seconds")
	}
	type run struct {
		rec  []string
		secs float64
	}
	base := map[string]float64{}
	var runs []run
	for k, rec := range recs[1:] {
		v, err := strconv.ParseFloat(rec[4], 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("slice runs: line %d: seconds %q: want a number > 0", k+2, rec[4])
		}
		key := rec[0] + "|" + rec[1]
		if rec[3] == "baseline" {
			if _, dup := base[key]; dup {
				return nil, fmt.Errorf("slice runs: line %d: a second baseline of %s", k+2, rec[1])
			}
			base[key] = v
			continue
		}
		runs = append(runs, run{rec, v})
	}
	var out []SliceRun
	for _, x := range runs {
		b, ok := base[x.rec[0]+"|"+x.rec[1]]
		if !ok {
			return nil, fmt.Errorf("slice runs: %s %s: no baseline line", x.rec[0], x.rec[1])
		}
		p, err := model.Profile(x.rec[3])
		if err != nil {
			return nil, fmt.Errorf("slice runs: %s %s: %w", x.rec[0], x.rec[1], err)
		}
		out = append(out, SliceRun{Model: x.rec[0], Type: x.rec[1], Slice: x.rec[3], SMs: p.SMs, GPUSMs: model.SMs,
			SMShare: float64(p.SMs) / float64(model.SMs), MemShare: float64(p.MemoryMiB) / float64(model.MemoryMiB), Speed: b / x.secs})
	}
	return out, nil
}

// SliceFit is how well a slice rule reproduces measured slice runs.
type SliceFit struct {
	// W is the fitted weight of the MPS answer in a slice's speed
	// (SliceBlend); 1 is a slice taken as an MPS share of its SMs.
	W    float64 `json:"w"`
	Runs int     `json:"runs"`
	// MeanError is the mean relative error over the runs at W;
	// MPSShareError at W = 1.
	MeanError     float64 `json:"mean_error"`
	MPSShareError float64 `json:"mps_share_error"`
}

// FitSliceWeight fits a slice rule's weight on a grid of 0.05 steps:
// speed(i, w) is the rule's speed for runs[i] at weight w, and the
// weight of least mean relative error wins (1 on ties and without runs).
func FitSliceWeight(runs []SliceRun, speed func(i int, w float64) float64) SliceFit {
	errAt := func(w float64) float64 {
		e := 0.0
		for i, r := range runs {
			e += math.Abs(speed(i, w)/r.Speed - 1)
		}
		return e / float64(max(1, len(runs)))
	}
	f := SliceFit{W: 1, Runs: len(runs), MPSShareError: errAt(1)}
	f.MeanError = f.MPSShareError
	for k := range 20 {
		w := float64(k) / 20
		if e := errAt(w); e < f.MeanError {
			f.W, f.MeanError = w, e
		}
	}
	return f
}

// SliceBlend is a job's speed alone in a MIG slice of c % of the GPU's
// SMs (and a like share of its L2 and memory bandwidth), from its speed
// at an MPS share of c % (mps) and alone on the whole GPU (whole): the
// geometric blend, weight w, of the MPS share (which shares the whole L2
// and memory system, so small shares run far above their share of SMs)
// and the whole GPU scaled to the slice's SMs (a GPU shrunk in every
// part).
func SliceBlend(mps, whole, c, w float64) float64 {
	if w >= 1 {
		return mps
	}
	if mps <= 0 || whole <= 0 {
		return 0
	}
	return math.Pow(mps, w) * math.Pow(whole*c/100, 1-w)
}

// FitSlices fits the estimator's slice rule (Slices) to measured slice
// runs of the job types it knows (profiled and trained on), at its
// OfflinePriority, sets it and reports the fit.
func (e *Estimator) FitSlices(runs []SliceRun) (SliceFit, error) {
	var known []SliceRun
	for _, r := range runs {
		_, profiled := e.Profiles[r.Type]
		_, trained := e.Model.Schema.Base[r.Type]
		if profiled && trained {
			known = append(known, r)
		}
	}
	type ans struct{ mps, whole float64 }
	answers := make([]ans, len(known))
	for i, r := range known {
		j := partitioner.Job{Type: r.Type, Online: KindOf(r.Type) == Online}
		mps, err := e.speed(j, r.SMs, r.GPUSMs, 100, nil)
		if err != nil {
			return SliceFit{}, fmt.Errorf("fit slices: %w", err)
		}
		whole, err := e.speed(j, r.GPUSMs, r.GPUSMs, 100, nil)
		if err != nil {
			return SliceFit{}, fmt.Errorf("fit slices: %w", err)
		}
		answers[i] = ans{mps, whole}
	}
	f := FitSliceWeight(known, func(i int, w float64) float64 {
		return SliceBlend(answers[i].mps, answers[i].whole, 100*known[i].SMShare, w)
	})
	e.Slices = &f
	return f, nil
}
