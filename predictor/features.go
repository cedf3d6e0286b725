package predictor

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Input is what the predictor knows of one job in a candidate placement:
// MMK Table I.
type Input struct {
	Job        string
	MPSPercent int
	SMs        int // of the instance
	CoRunners  int
	// JobUtil is the job's utilisation alone at 100 %; CoUtil the sum of
	// the co-runners' utilisations alone at their percentages.
	JobUtil, CoUtil Util
}

// InputOf is a sample's input.
func InputOf(s Sample) Input {
	return Input{Job: s.Job, MPSPercent: s.MPSPercent, SMs: s.SMs, CoRunners: s.CoRunners, JobUtil: s.JobUtil, CoUtil: s.CoUtil}
}

// Schema is the feature layout of a model: one column per job type
// (one-hot), then the numeric features. The target is the natural log of
// the job's latency (online) or throughput (offline) relative to the same
// job alone at 100 % (Base, part of the job's profile like its
// utilisation): one model serves jobs whose targets differ by orders of
// magnitude, and learns how MPS shares and co-runners change them.
type Schema struct {
	Jobs    []string `json:"jobs"`
	Numeric []string `json:"numeric"`
	Target  string   `json:"target"`
	// Base is, per job type, the log of its target alone at 100 %.
	Base     map[string]float64 `json:"base_log_target"`
	features []string
}

// numericFeatures are the numeric columns, in order.
var numericFeatures = []string{
	"mps_pct", "instance_sms", "co_runners",
	"job_sm_util", "job_sm_occ", "job_dram_bw", "job_gpu_util", "job_mem_util",
	"co_sm_util", "co_sm_occ", "co_dram_bw", "co_gpu_util", "co_mem_util",
}

// targetLog names the target transform.
const targetLog = "log(target / target alone at 100 %); target = iter_ms for online jobs, items_per_s for offline jobs"

// IsProfile reports whether a sample is part of its job's profile: the
// job alone at 100 %, which gives its utilisation features and the base
// of its target. Profile samples are always trained on, never tested.
func IsProfile(s Sample) bool { return s.CoRunners == 0 && s.MPSPercent == 100 }

// Bases are the log targets of the profile samples, by job type.
func Bases(samples []Sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if IsProfile(s) {
			out[s.Job] = math.Log(s.Target())
		}
	}
	return out
}

// NewSchema is the schema for these job types (sorted, deduplicated).
func NewSchema(jobs []string) Schema {
	jobs = slices.Clone(jobs)
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	s := Schema{Jobs: jobs, Numeric: slices.Clone(numericFeatures), Target: targetLog}
	return s
}

// SchemaOf is the schema of a dataset's job types.
func SchemaOf(samples []Sample) Schema {
	jobs := make([]string, 0, len(samples))
	for _, s := range samples {
		jobs = append(jobs, s.Job)
	}
	return NewSchema(jobs)
}

// Features are the names of the columns.
func (s *Schema) Features() []string {
	if s.features == nil {
		for _, j := range s.Jobs {
			s.features = append(s.features, "job="+j)
		}
		s.features = append(s.features, s.Numeric...)
	}
	return s.features
}

// Check reports how another schema (this build's, or a dataset's) differs
// from s: missing job types, another feature list or target.
func (s *Schema) Check(want Schema) error {
	if !slices.Equal(s.Numeric, want.Numeric) {
		return fmt.Errorf("schema: features %v differ from %v", s.Numeric, want.Numeric)
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
	v := make([]float64, len(s.Jobs), len(s.Jobs)+len(numericFeatures))
	v[i] = 1
	v = append(v, float64(in.MPSPercent), float64(in.SMs), float64(in.CoRunners))
	v = append(v, in.JobUtil.values()...)
	v = append(v, in.CoUtil.values()...)
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
		x[i], y[i] = v, math.Log(smp.Target())-s.Base[smp.Job]
	}
	return x, y, nil
}
