package partitioner

import (
	"fmt"
	"math"
	"slices"
)

// RestartCost is what restarting one running job costs, in seconds of
// the job's own progress, and how long it is expected to run on. mmkd
// measures both (node: restart costs); the gate weighs them against the
// plan's predicted gain.
type RestartCost struct {
	// Lost is the seconds of progress a restart takes from the job: its
	// stop, its start-up until it works on the GPU again, and the work
	// since its last checkpoint (all of it for a job that keeps none).
	Lost float64 `json:"lost"`
	// Horizon is how many more seconds the job is expected to run: the
	// gain of a new placement accrues that long at most.
	Horizon float64 `json:"horizon"`
}

// GateVerdict is why a plan that restarts running jobs was carried out
// or replaced by the plan that keeps every running job where it is.
type GateVerdict struct {
	// Restarts are the running jobs the unrestricted plan restarts.
	Restarts []string `json:"restarts"`
	// Gain is the unrestricted plan's predicted total speed minus the
	// keeping plan's (speeds are relative to a job alone on a whole GPU).
	Gain float64 `json:"gain"`
	// Horizon is the least Horizon of the restarted jobs: the seconds the
	// gain is counted over.
	Horizon float64 `json:"horizon"`
	// Cost is the work the restarts lose: the sum over the restarted jobs
	// of their speed where they are times their Lost seconds.
	Cost float64 `json:"cost"`
	// Restart reports the choice: Gain x Horizon > Cost.
	Restart bool `json:"restart"`
}

// String says what the gate weighed, for the log.
func (v GateVerdict) String() string {
	rel := ">"
	if !v.Restart {
		rel = "<="
	}
	return fmt.Sprintf("gain %.3f x horizon %.0f s = %.1f %s restart cost %.1f (speed-seconds)", v.Gain, v.Horizon, v.Gain*v.Horizon, rel, v.Cost)
}

// DecideGated is Decide with a restart gate: a plan that restarts running
// jobs is carried out only when its predicted gain over the plan that
// keeps every running job (Options.KeepRunning), counted over the
// restarted jobs' horizon, exceeds the work their restarts lose. The
// verdict is nil when the plan restarts nothing.
//
// costs is asked only for the jobs the plan restarts; a job it does not
// know (ok false) is taken as free to restart (mmkd answers so for jobs
// that are already stopping).
func DecideGated(req Request, est Estimator, opt Options, costs func(id string) (c RestartCost, ok bool)) (*Plan, *GateVerdict, error) {
	plan, err := Decide(req, est, opt)
	if err != nil || opt.KeepRunning {
		return plan, nil, err
	}
	var restarts []string
	for _, ch := range plan.Changes {
		restarts = append(restarts, ch.Restart...)
	}
	if len(restarts) == 0 {
		return plan, nil, nil
	}
	keepOpt := opt
	keepOpt.KeepRunning = true
	keep, err := Decide(req, est, keepOpt)
	if err != nil {
		return nil, nil, fmt.Errorf("restart gate: the plan that keeps running jobs: %w", err)
	}
	v := &GateVerdict{Restarts: restarts, Gain: plan.Total - keep.Total, Horizon: math.Inf(1)}
	for _, id := range restarts {
		c, ok := costs(id)
		if !ok {
			continue
		}
		if c.Lost < 0 || c.Horizon < 0 || math.IsNaN(c.Lost) || math.IsNaN(c.Horizon) {
			return nil, nil, fmt.Errorf("restart gate: job %s: restart cost lost %v s, horizon %v s: want numbers >= 0", id, c.Lost, c.Horizon)
		}
		v.Horizon = min(v.Horizon, c.Horizon)
		v.Cost += speedIn(keep, id) * c.Lost
	}
	if math.IsInf(v.Horizon, 1) {
		// Every restarted job is already stopping: nothing more is lost.
		v.Horizon = 0
		v.Restart = v.Gain > 0
	} else {
		v.Restart = v.Gain > 0 && v.Gain*v.Horizon > v.Cost
	}
	if v.Restart {
		return plan, v, nil
	}
	return keep, v, nil
}

// speedIn is job id's predicted speed in plan (0 if it is not placed).
func speedIn(plan *Plan, id string) float64 {
	for _, g := range plan.GPUs {
		if k := slices.IndexFunc(g.Jobs, func(p Placed) bool { return p.Job.ID == id }); k >= 0 {
			return g.Jobs[k].Speed
		}
	}
	return 0
}
