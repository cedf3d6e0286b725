package node

import (
	"fmt"
	"slices"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/slo"
)

// withRestraints fills in each running offline job of list what its
// instance's latency controller does to it now (jobs.Restraint): a job
// restrained for another's target shows it in its state and reason
// everywhere mmkd answers with jobs (issue 53: a suspended trainer
// showed "running" with no reason). Call it without n.mu.
func (n *Node) withRestraints(list []jobs.Job) {
	var views map[string]instanceSLO
	for i := range list {
		j := &list[i]
		if j.Spec.Kind != jobs.Offline || j.State != jobs.Running || j.Placement == nil {
			continue
		}
		if views == nil {
			views = n.sloInstances(false)
		}
		if in, ok := views[j.Placement.InstanceKey]; ok {
			j.Restraint = restraintOf(j.ID, in)
		}
	}
}

// restraintOf is what the controller of an instance does to its offline
// job id (nil: nothing beyond MPS priority).
func restraintOf(id string, in instanceSLO) *jobs.Restraint {
	v := in.SLOView
	if !v.Active || v.Level == 0 {
		return nil
	}
	r, err := slo.ParseRung(v.Rung)
	if err != nil {
		return nil
	}
	var pids []int
	for _, ref := range v.Offline {
		if ref.Job == id {
			pids = append(pids, ref.PID)
		}
	}
	inSet := func(set []int) bool {
		return slices.ContainsFunc(pids, func(p int) bool { return slices.Contains(set, p) })
	}
	shielded := len(pids) > 0 && inSet(v.Shielded)
	var state, how string
	switch {
	case len(pids) == 0:
		return nil // its hook is not connected: nothing reaches it
	case r.Suspend && inSet(v.Suspended):
		state, how = "suspended", "suspended"
	case r.Suspend && inSet(v.Unstopped):
		state, how = "released", "running for its progress floor between suspensions (slo.max_stop)"
	case r.TPCs > 0 && !shielded && v.TPCKeep > 0:
		state, how = "masked", fmt.Sprintf("masked to %d TPCs", v.TPCKeep)
		if r.PerRequest {
			// A request-scoped mask (tpcs=F/req) holds only while a
			// request runs: "masked to N TPCs" alone read as masked
			// throughout.
			how += " while requests run"
		}
	case r.Holds():
		state, how = "held", "its kernels held while requests run ("+v.Rung+")"
	case shielded:
		return nil // another user's, beyond the rung's reach
	default:
		return nil
	}
	out := &jobs.Restraint{State: state, How: how, Rung: v.Rung}
	for _, s := range v.Services {
		if s.Job != "" && !slices.Contains(out.For, s.Job) {
			out.For = append(out.For, s.Job)
		}
	}
	if n := len(v.Decisions); n > 0 {
		out.Reason = v.Decisions[n-1].Reason
	}
	return out
}
