package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// adoptedReason is the event of a job written back into the store from
// its directory.
const adoptedReason = "adopted from its job directory: the store did not know this run (it was lost, or restored from an older backup)"

// adoptOrphans writes back into the store the jobs whose directories
// know more than the store does: a job the store lacks (the store was
// lost: deleted, truncated, replaced by an empty one) and a job the store
// has as pending whose directory holds a later run (the store was
// restored from an older backup). Each is written as its shim says it
// stands: running (adopted, watched and stoppable again), ended with its
// exit status, or pending when it never started. A directory whose shim
// still runs a job that left no record to adopt it from (an mmk that
// wrote none) stops mmkd from starting: it would run beside jobs it
// cannot see. all is the store's jobs (Store.All, in id order) as New read them. It
// returns how many jobs it adopted.
func (n *Node) adoptOrphans(all []jobs.Job) (int, error) {
	ids, err := n.cfg.Runner.JobIDs()
	if err != nil {
		return 0, err
	}
	adopted := 0
	var unknown []string
	for _, id := range ids {
		// all is in id order (Store.All): a search per directory, not a
		// map of every job copied (a tenth of a start at 30,000 queued
		// jobs, most of which have no directory yet).
		var stored jobs.Job
		i, inStore := slices.BinarySearchFunc(all, id, func(j jobs.Job, id string) int { return strings.Compare(j.ID, id) })
		if inStore {
			stored = all[i]
		}
		rec, found, err := n.cfg.Runner.Record(id)
		if err != nil {
			n.cfg.Log.Warn("recovery: unreadable job record", "job", id, "err", err)
			found = false
		}
		if inStore && (!found || stored.State != jobs.Pending || rec.Restarts < stored.Restarts || !n.cfg.Runner.HasRun(id)) {
			continue // the store knows this run
		}
		proc, exit, aerr := n.cfg.Runner.Adopt(id)
		if !found {
			if !inStore && aerr == nil && exit == nil {
				unknown = append(unknown, fmt.Sprintf("%s (shim pid %d)", id, proc.ShimPID))
			} else if !inStore {
				n.cfg.Log.Warn("recovery: a job directory the store does not know, with no record; left as it is", "job", id)
			}
			continue
		}
		j := adoptedState(rec, proc, exit, aerr, n.cfg.Now())
		if err := n.cfg.Store.Recover(j, n.cfg.Now(), adoptedReason); err != nil {
			return adopted, err
		}
		n.cfg.Log.Warn("recovery: job adopted from its directory", "job", id, "state", j.State, "storeHad", stored.State)
		adopted++
	}
	if len(unknown) > 0 {
		return adopted, fmt.Errorf("the job directories of %s hold running jobs that the store does not know and that left no record to adopt them from: "+
			"stop them (SIGTERM to their shims) or restore the store, then start mmkd again", strings.Join(unknown, ", "))
	}
	return adopted, nil
}

// adoptedState is the job of record rec as its shim reports it now
// (Runner.Adopt's answer).
func adoptedState(rec jobs.Job, proc jobs.Proc, exit *jobs.Exit, err error, now time.Time) jobs.Job {
	j := rec
	switch {
	case exit != nil:
		code := exit.Code
		j.ExitCode, j.Signal, j.FinishedAt, j.PID = &code, exit.Signal, exit.At, 0
		j.State = jobs.Succeeded
		if exit.Error != "" || exit.Code != 0 {
			j.State = jobs.Failed
		}
	case err == nil:
		j.State, j.PID, j.ShimPID, j.StartedAt = jobs.Running, proc.PID, proc.ShimPID, proc.StartedAt
	case errors.Is(err, jobs.ErrNotStarted):
		j.State, j.Placement, j.PID, j.ShimPID = jobs.Pending, nil, 0, 0
	default:
		j.State, j.FinishedAt, j.PID = jobs.Failed, now, 0
	}
	return j
}
