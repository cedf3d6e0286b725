package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// The classes of what holds a waiting job (jobs.Wait.Class), counted in
// /metrics.
const (
	// WaitMemory: no instance has the job's memory free.
	WaitMemory = "memory"
	// WaitMemoryLimit: the job's memory exceeds every instance.
	WaitMemoryLimit = "memory-limit"
	// WaitShare: instances have its memory but no MPS share left.
	WaitShare = "share"
	// WaitMIG: the MIG change that would make room is deferred.
	WaitMIG = "mig"
	// WaitSLO: no instance with room gives the speed its latency target
	// needs.
	WaitSLO = "slo"
	// WaitNoInstance: there is no instance to place on.
	WaitNoInstance = "no-instance"
	// WaitStart: it was placed but its start was postponed.
	WaitStart = "start"
	// WaitMasks: mmkd is mapping a GPU's TPC mask slots (masks.go).
	WaitMasks = "tpc-map"
	// WaitOther: Algorithm 1 found no place for another reason.
	WaitOther = "other"
)

// WaitClasses are the classes, in the order /metrics lists them.
var WaitClasses = []string{WaitMemory, WaitMemoryLimit, WaitShare, WaitMIG, WaitSLO, WaitNoInstance, WaitStart, WaitMasks, WaitOther}

// WaitingView is a waiting job in the plan: its id, name and what holds
// it.
type WaitingView struct {
	ID   string    `json:"id"`
	Name string    `json:"name"`
	Wait jobs.Wait `json:"wait"`
}

// gib writes MiB as GiB, whole or with one decimal.
func gib(mib int64) string {
	if mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%.1f GiB", float64(mib)/1024)
}

// instanceName is an instance as a reason names it, by its name as
// everywhere with its profile: "gpu0/gi2 (3g.40gb)", "gpu2 (whole GPU)"
// (issue 53: "GPU 1 (3g.40gb)" was ambiguous on a GPU with two). An
// instance of a layout the plan would make has no name yet: "a 3g.40gb
// instance of gpu0's new layout".
func instanceName(g gpuInfo, layout partitioner.Layout, i int, in partitioner.Instance) string {
	gpu := "gpu" + strconv.Itoa(g.state.Index)
	switch {
	case !g.mig:
		return gpu + " (whole GPU)"
	case i < len(g.names) && layout.String() == g.layout.String():
		return g.names[i] + " (" + in.Profile.Name + ")"
	}
	return "a " + in.Profile.Name + " instance of " + gpu + "'s new layout"
}

// waitReason says what holds job j, which the plan left waiting: the
// constraint that stops it, with numbers, and its class. gpus are the
// GPUs the request placed on, in the plan's order; names maps job ids to
// names; managed says whether the loop may change MIG layouts. Pure: it
// reads only its arguments.
func waitReason(j partitioner.Job, plan *partitioner.Plan, gpus []gpuInfo, names map[string]string, managed, mps bool) (class, reason string) {
	if j.Pin != nil {
		return WaitOther, fmt.Sprintf("waits for room in the instance it was allocated (GPU position %d, instance %d)", j.Pin.GPU, j.Pin.Instance)
	}
	avoided := func(p int) bool { return slices.Contains(j.Avoid, p) }
	// The largest instance the job could get, and the most memory free.
	var largest, bestFree int64 = -1, -1
	var largestAt, freeAt string
	var full []string // instances with its memory free but no share left
	instances := 0
	for p, gp := range plan.GPUs {
		if avoided(p) || p >= len(gpus) {
			continue
		}
		g := gpus[p]
		idx := g.state.Index
		for i, in := range gp.Layout.Instances {
			name := instanceName(g, gp.Layout, i, in)
			instances++
			if in.Profile.MemoryMiB > largest {
				largest, largestAt = in.Profile.MemoryMiB, name
			}
			var used int64
			pct, n := 0, 0
			for _, pl := range gp.Jobs {
				if pl.Instance == i {
					used += pl.Job.MemoryMiB
					pct += pl.Percent
					n++
				}
			}
			free := in.Profile.MemoryMiB - used
			if free > bestFree {
				bestFree, freeAt = free, name
			}
			if free >= j.MemoryMiB && pct >= 100 {
				full = append(full, fmt.Sprintf("%s gives %d %% to %d jobs", name, pct, n))
			}
		}
		if managed && gp.Layout.Model != nil {
			m := gp.Layout.Model
			if whole := m.Profiles[len(m.Profiles)-1]; whole.MemoryMiB > largest {
				largest, largestAt = whole.MemoryMiB, fmt.Sprintf("gpu%d (%s, by a MIG change)", idx, whole.Name)
			}
		}
	}
	if instances == 0 && largest < 0 {
		var why []string
		for p := range plan.GPUs {
			if p < len(gpus) && !avoided(p) {
				why = append(why, fmt.Sprintf("gpu%d has no MIG instance and mig.manage is off", gpus[p].state.Index))
			}
		}
		if len(why) == 0 {
			return WaitNoInstance, "no GPU to place on"
		}
		return WaitNoInstance, strings.Join(why, "; ")
	}
	if j.MemoryMiB > largest {
		return WaitMemoryLimit, fmt.Sprintf("memory limit exceeds any instance: needs %s; the largest is %s on %s", gib(j.MemoryMiB), gib(largest), largestAt)
	}
	if j.MemoryMiB > bestFree {
		short := fmt.Sprintf("needs %s; the most free is %s on %s", gib(j.MemoryMiB), gib(max(bestFree, 0)), freeAt)
		if managed {
			// A layout search skips a GPU where online jobs run.
			for p, gp := range plan.GPUs {
				if avoided(p) || p >= len(gpus) {
					continue
				}
				for _, pl := range gp.Jobs {
					if pl.Job.Online {
						return WaitMIG, fmt.Sprintf("MIG change deferred: online job %s on gpu%d; %s", nameOf(names, pl.Job.ID), gpus[p].state.Index, short)
					}
				}
			}
		}
		return WaitMemory, short
	}
	if len(full) > 0 {
		if !mps {
			// The placement's shares all the same (MPS off: nothing
			// enforces them, mps.enabled).
			return WaitShare, "no share left (the placement's; MPS is off): " + strings.Join(full, "; ")
		}
		return WaitShare, "no MPS share left: " + strings.Join(full, "; ")
	}
	if j.MinSpeed > 0 {
		return WaitSLO, fmt.Sprintf("needs a predicted speed of %.2f for its latency target; no instance with room gives it (placed where it fits after placement.slo_max_wait)", j.MinSpeed)
	}
	if len(j.Avoid) > 0 {
		return WaitOther, "moved off a strained GPU; no other GPU has room"
	}
	return WaitOther, fmt.Sprintf("no instance with %s free took it (its share there would lower the predicted total)", gib(j.MemoryMiB))
}

// nameOf is a job's name, else its id.
func nameOf(names map[string]string, id string) string {
	if n := names[id]; n != "" {
		return n + " (" + id + ")"
	}
	return id
}

// noteWaits records, after a decision, what holds each pending job: those
// the plan left waiting (waitReason), those whose MIG change was deferred
// (deferred: job id -> reason) and those whose start was postponed. gpus
// are the request's GPUs in the plan's order.
func (n *Node) noteWaits(plan *partitioner.Plan, gpus []gpuInfo, managed bool, deferred map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	names := make(map[string]string, len(n.order))
	for _, j := range n.order {
		if j.State != jobs.Succeeded && j.State != jobs.Failed && j.State != jobs.Cancelled {
			names[j.ID] = j.Spec.Name
		}
	}
	why := map[string]jobs.Wait{}
	if plan != nil {
		for _, w := range plan.Waiting {
			c, r := waitReason(w, plan, gpus, names, managed, n.cfg.MPS != nil)
			why[w.ID] = jobs.Wait{Class: c, Reason: r}
		}
	}
	for id, r := range deferred {
		why[id] = jobs.Wait{Class: WaitMIG, Reason: r}
	}
	n.setWaits(func(j *jobs.Job) (jobs.Wait, bool) {
		w, ok := why[j.ID]
		if !ok && strings.HasPrefix(j.Reason, "start postponed") {
			w, ok = jobs.Wait{Class: WaitStart, Reason: j.Reason}, true
		}
		return w, ok
	})
}

// setWaits keeps what holds each pending job, as why says it (ok false:
// nothing said), in queue order: its position among those held and since
// when; n.mu is held.
func (n *Node) setWaits(why func(j *jobs.Job) (jobs.Wait, bool)) {
	waits := map[string]jobs.Wait{}
	pos := 0
	for _, j := range n.order {
		if j.State != jobs.Pending {
			continue
		}
		w, ok := why(j)
		if !ok {
			continue
		}
		pos++
		w.Since, w.Position = j.UpdatedAt, pos
		waits[j.ID] = w
	}
	n.waits = waits
}

// noteMapping says why every pending job waits while a GPU's TPC slots
// are mapped.
func (n *Node) noteMapping(why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setWaits(func(*jobs.Job) (jobs.Wait, bool) { return jobs.Wait{Class: WaitMasks, Reason: why}, true })
}

// withWait is j with what holds it, if it waits; n.mu is held.
func (n *Node) withWait(j jobs.Job) jobs.Job {
	if j.State != jobs.Pending {
		return j
	}
	if w, ok := n.waits[j.ID]; ok {
		j.Wait = &w
	}
	return j
}
