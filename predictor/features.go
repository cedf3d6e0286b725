package predictor

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// CoFeatures are a job's features of its co-runners, built one co-runner
// at a time by AddCoRunner, the same way for training samples (profiling) and
// for predictions (Estimator).
type CoFeatures struct {
	// CoUtil is the sum of the co-runners' utilisations alone at their
	// percentages.
	CoUtil Util
	// CoMPSPct is the sum of the co-runners' MPS percentages.
	CoMPSPct int
	// CoAboveSM and CoBelowSM are the SM utilisations alone (at their
	// percentages) summed over the co-runners at a higher client
	// priority than the job's (they go first) and at a lower one (the
	// job goes first).
	CoAboveSM, CoBelowSM float64
}

// AddCoRunner counts one co-runner: its utilisation alone u at its percentage
// pct, and its client priority prio against the job's own.
func (c *CoFeatures) AddCoRunner(u Util, pct, prio, own int) {
	c.CoUtil = c.CoUtil.Add(u)
	c.CoMPSPct += pct
	switch {
	case prio < own:
		c.CoAboveSM += u.SM
	case prio > own:
		c.CoBelowSM += u.SM
	}
}

// Input is what the predictor knows of one job in a candidate placement:
// MMK Table I.
type Input struct {
	Job        string
	MPSPercent int
	SMs        int // of the instance
	CoRunners  int
	// JobUtil is the job's utilisation alone at 100 %.
	JobUtil Util
	// MPSPriority is the job's client priority (0 normal, 1 below).
	MPSPriority int
	// CoFeatures describe the co-runners, as in Sample.
	CoFeatures
	// CoJobs are the co-runners' job types (for models with co-runner
	// identity features).
	CoJobs []string
}

// InputOf is a sample's input.
func InputOf(s Sample) Input {
	in := Input{Job: s.Job, MPSPercent: s.MPSPercent, SMs: s.SMs, CoRunners: s.CoRunners, JobUtil: s.JobUtil,
		MPSPriority: s.MPSPriority, CoFeatures: s.CoFeatures}
	if run, err := ParseRunKey(s.Run); err == nil {
		if co, err := run.Without(s.Job, s.MPSPercent, s.MPSPriority); err == nil {
			for _, m := range co {
				in.CoJobs = append(in.CoJobs, m.Job)
			}
		}
	}
	return in
}

// Schema is the feature layout of a model: one column per job type
// (one-hot), then the numeric features. The target is the natural log of
// the job's latency (online) or throughput (offline) relative to the same
// job alone at 100 % (Base, part of the job's profile like its
// utilisation): one model serves jobs whose targets differ by orders of
// magnitude, and learns how MPS shares and co-runners change them.
//
// Numeric is MMK Table I's features (numericFeatures), followed by the
// extended ones (extFeatures: client priority and shares) when the model
// was trained on samples that measured them. With CoIdentity, a column
// per job type counts the co-runners of that type.
type Schema struct {
	Jobs       []string `json:"jobs"`
	Numeric    []string `json:"numeric"`
	CoIdentity bool     `json:"co_identity,omitempty"`
	Target     string   `json:"target"`
	// Base is, per job type, the log of its target alone at 100 %.
	Base     map[string]float64 `json:"base_log_target"`
	features []string
}

// numericFeatures are MMK Table I's numeric columns, in order.
var numericFeatures = []string{
	"mps_pct", "instance_sms", "co_runners",
	"job_sm_util", "job_sm_occ", "job_dram_bw", "job_gpu_util", "job_mem_util",
	"co_sm_util", "co_sm_occ", "co_dram_bw", "co_gpu_util", "co_mem_util",
}

// extFeatures follow numericFeatures for samples with the extended
// columns: whether the job is online, its client priority, the
// co-runners' summed shares and their SM use above and below the job's
// priority. The extended schema's target is a speed (targetSpeed).
var extFeatures = []string{"online", "mps_prio", "co_mps_pct", "co_above_sm_util", "co_below_sm_util"}

// targetLog names the target transform of MMK Table I's schema.
const targetLog = "log(target / target alone at 100 %); target = iter_ms for online jobs, items_per_s for offline jobs"

// targetSpeed names the extended schema's target: one direction for
// every job (a speed ratio, below 0 when slower), so that a model can
// carry what it learned of one job type to another, and a job type it
// has not seen (but profiled) is not mistaken for the other kind.
const targetSpeed = "log(speed / speed alone at 100 %); speed = items_per_s for offline jobs, 1/iter_ms for online jobs"

// sign is +1 where the model's target is the log target ratio and -1
// where it is the log speed ratio of an online job (inverse latency).
func (s *Schema) sign(job string) float64 {
	if s.Target == targetSpeed && KindOf(job) == Online {
		return -1
	}
	return 1
}

// IsProfile reports whether a sample is part of its job's profile: the
// job alone at 100 %, which gives its utilisation features and the base
// of its target. Profile samples are always trained on, never tested.
func IsProfile(s Sample) bool { return s.CoRunners == 0 && s.MPSPercent == 100 }

// Bases are the log targets of the profile samples, by job type (the
// mean over a profile's repetitions).
func Bases(samples []Sample) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, s := range samples {
		if IsProfile(s) {
			sum[s.Job] += math.Log(s.Target())
			n[s.Job]++
		}
	}
	for j := range sum {
		sum[j] /= float64(n[j])
	}
	return sum
}

// NewSchema is the schema for these job types (sorted, deduplicated)
// with MMK Table I's features, and the extended ones if ext.
func NewSchema(jobs []string, ext bool) Schema {
	jobs = slices.Clone(jobs)
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	s := Schema{Jobs: jobs, Numeric: slices.Clone(numericFeatures), Target: targetLog}
	if ext {
		s.Numeric, s.Target = append(s.Numeric, extFeatures...), targetSpeed
	}
	return s
}

// SchemaOf is the schema of a dataset's job types: with the extended
// features when every sample measured them.
func SchemaOf(samples []Sample) Schema {
	jobs := make([]string, 0, len(samples))
	ext := len(samples) > 0
	for _, s := range samples {
		jobs = append(jobs, s.Job)
		ext = ext && s.Extended
	}
	return NewSchema(jobs, ext)
}

// extended reports whether the schema has the extended features.
func (s *Schema) extended() bool { return len(s.Numeric) == len(numericFeatures)+len(extFeatures) }

// Features are the names of the columns.
func (s *Schema) Features() []string {
	if s.features == nil {
		for _, j := range s.Jobs {
			s.features = append(s.features, "job="+j)
		}
		s.features = append(s.features, s.Numeric...)
		if s.CoIdentity {
			for _, j := range s.Jobs {
				s.features = append(s.features, "co="+j)
			}
		}
	}
	return s.features
}

// Check reports how another schema (this build's, or a dataset's) differs
// from s: missing job types, another target, or features this build does
// not know. Inputs of datasets without the extended columns carry the
// extended features too (derived from the runs' keys), so either feature
// list serves any dataset.
func (s *Schema) Check(want Schema) error {
	if !slices.Equal(s.Numeric, numericFeatures) && !slices.Equal(s.Numeric, append(slices.Clone(numericFeatures), extFeatures...)) {
		return fmt.Errorf("schema: features %v are neither %v nor those and %v", s.Numeric, numericFeatures, extFeatures)
	}
	if s.Target != want.Target {
		return fmt.Errorf("schema: target %q differs from %q", s.Target, want.Target)
	}
	var missing []string
	for _, j := range want.Jobs {
		if !slices.Contains(s.Jobs, j) {
			missing = append(missing, j)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("schema: job types %s are not in the model (it knows %s)", strings.Join(missing, ", "), strings.Join(s.Jobs, ", "))
	}
	return nil
}

// Vector is the feature row of an input.
func (s *Schema) Vector(in Input) ([]float64, error) {
	i, ok := slices.BinarySearch(s.Jobs, in.Job)
	if !ok {
		return nil, fmt.Errorf("job type %q is not in the model (it knows %s)", in.Job, strings.Join(s.Jobs, ", "))
	}
	v := make([]float64, len(s.Jobs), len(s.Features()))
	v[i] = 1
	v = append(v, float64(in.MPSPercent), float64(in.SMs), float64(in.CoRunners))
	v = append(v, in.JobUtil.values()...)
	v = append(v, in.CoUtil.values()...)
	if s.extended() {
		online := 0.0
		if KindOf(in.Job) == Online {
			online = 1
		}
		v = append(v, online, float64(in.MPSPriority), float64(in.CoMPSPct), in.CoAboveSM, in.CoBelowSM)
	}
	if s.CoIdentity {
		co := make([]float64, len(s.Jobs))
		for _, j := range in.CoJobs {
			// A co-runner of a type the model does not know adds to no
			// column: the model knows it by its utilisation alone.
			if k, ok := slices.BinarySearch(s.Jobs, j); ok {
				co[k]++
			}
		}
		v = append(v, co...)
	}
	return v, nil
}

// Matrix is the feature rows and targets (log, relative to the job's
// base) of samples.
func (s *Schema) Matrix(samples []Sample) ([][]float64, []float64, error) {
	x := make([][]float64, len(samples))
	y := make([]float64, len(samples))
	for i, smp := range samples {
		v, err := s.Vector(InputOf(smp))
		if err != nil {
			return nil, nil, fmt.Errorf("sample %d (run %s): %w", i, smp.Run, err)
		}
		x[i], y[i] = v, s.sign(smp.Job)*(math.Log(smp.Target())-s.Base[smp.Job])
	}
	return x, y, nil
}
