package predictor

import "fmt"

// Profile is what profiling knows of a job type: its utilisation alone
// at each MPS percentage it was measured at (100 % gives its features).
type Profile struct {
	Job   string
	Alone map[int]Util
	// SMs is the instance size the job was profiled on.
	SMs int
}

// CoRunner is another job in the same partition, at its MPS percentage.
type CoRunner struct {
	Profile Profile
	Percent int
}

// STP is the estimate the partition algorithm asks for (MMK's stp): a
// job's throughput (items/s, offline jobs) or latency (ms, online jobs)
// in a partition of sms SMs at an MPS percentage, next to co-runners.
type STP interface {
	STP(job Profile, sms, percent int, co []CoRunner) (float64, error)
}

// ModelSTP answers STP with a trained model.
type ModelSTP struct{ Model *Model }

var _ STP = ModelSTP{}

// STP builds the Table I features and asks the model.
func (p ModelSTP) STP(job Profile, sms, percent int, co []CoRunner) (float64, error) {
	ju, ok := job.Alone[100]
	if !ok {
		return 0, fmt.Errorf("stp: job %s has no profile alone at 100 %%", job.Job)
	}
	var cu Util
	for _, c := range co {
		u, ok := c.Profile.Alone[c.Percent]
		if !ok {
			return 0, fmt.Errorf("stp: co-runner %s has no profile alone at %d %%", c.Profile.Job, c.Percent)
		}
		cu = cu.Add(u)
	}
	return p.Model.Predict(Input{Job: job.Job, MPSPercent: percent, SMs: sms, CoRunners: len(co), JobUtil: ju, CoFeatures: CoFeatures{CoUtil: cu}})
}

// Profiles collects every job type's alone utilisations from a dataset
// (the mean over repetitions of an alone run).
func Profiles(samples []Sample) map[string]Profile {
	out := map[string]Profile{}
	type key struct {
		job string
		pct int
	}
	n := map[key]float64{}
	for _, s := range samples {
		if s.CoRunners != 0 {
			continue
		}
		p, ok := out[s.Job]
		if !ok {
			p = Profile{Job: s.Job, Alone: map[int]Util{}, SMs: s.SMs}
			out[s.Job] = p
		}
		k := key{s.Job, s.MPSPercent}
		n[k]++
		// A running mean, exact for one repetition.
		old, w := p.Alone[s.MPSPercent], 1/n[k]
		p.Alone[s.MPSPercent] = Util{
			SM: old.SM + (s.RunUtil.SM-old.SM)*w, Occupancy: old.Occupancy + (s.RunUtil.Occupancy-old.Occupancy)*w,
			DRAM: old.DRAM + (s.RunUtil.DRAM-old.DRAM)*w, GPU: old.GPU + (s.RunUtil.GPU-old.GPU)*w, Mem: old.Mem + (s.RunUtil.Mem-old.Mem)*w,
		}
	}
	return out
}
