package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
)

// launch places a pending job and starts it: the placement is written
// (placed) before the process starts, and the process (running, with its
// pid) once it did. A process that fails to start marks the job failed
// with the reason; an environment that fails puts it back to pending
// (maxEnvFailures) and reports it postponed: the caller decides again
// after retryAfter, whether or not anything else happens.
func (n *Node) launch(ctx context.Context, id string, pl jobs.Placement, g gpuInfo) (postponed bool) {
	// An earlier run's records go before the job is placed: after a crash
	// between here and the start, they must not pass for the new run's.
	if err := n.cfg.Runner.Reset(id); err != nil {
		n.cfg.Log.Error("placement: clear the job's earlier run", "job", id, "err", err)
		return true
	}
	if n.cfg.MPS != nil {
		if j, ok := n.get(id); ok {
			pl.MemLimitMiB = n.cfg.MemLimit.limitFor(&j)
			if j.ShareCap > 0 && j.ShareCapAt == pl.InstanceKey && pl.MPSPercent > j.ShareCap {
				pl.MPSPercent = j.ShareCap
			}
		}
	}
	j, err := n.move(id, jobs.Placed, "", func(j *jobs.Job) { j.Placement = &pl })
	if err != nil {
		n.cfg.Log.Error("placement: place job", "job", id, "err", err)
		return true
	}
	env, err := n.jobEnv(ctx, &j, g)
	if err != nil {
		// An MPS daemon or a scheduler that would not start is mmk's
		// trouble, not the job's: it waits for another try, and fails
		// only when the trouble stays.
		n.envFailures[id]++
		if n.envFailures[id] >= maxEnvFailures {
			delete(n.envFailures, id)
			n.fail(id, fmt.Sprintf("environment: %v", err))
			return false
		}
		n.cfg.Log.Warn("placement: job environment; the job waits for another try", "job", id, "err", err)
		if _, err := n.move(id, jobs.Pending, fmt.Sprintf("start postponed: %v", err), func(j *jobs.Job) { j.Placement = nil }); err != nil {
			n.cfg.Log.Error("placement: requeue job", "job", id, "err", err)
		}
		return true
	}
	delete(n.envFailures, id)
	if j.IsClaim() {
		n.grant(id, env) // the kubelet starts its containers
		return false
	}
	if err := checkOwnerAtStart(j.Owner, n.cfg.AllowRoot); err != nil {
		who := "mmkd's user"
		if j.Owner != nil {
			who = j.Owner.String()
		}
		n.fail(id, fmt.Sprintf("run as %s: %v", who, err))
		return false
	}
	user, err := runAs(&j)
	if err != nil {
		n.fail(id, fmt.Sprintf("run as %s: %v", j.Owner, err))
		return false
	}
	// WorkDir "" is the job's own directory (its checkpoint directory
	// for a job of another user).
	// The job's record goes beside it: should the store be lost, the
	// next mmkd adopts the job from it (adoptOrphans).
	rec, err := jobs.EncodeRecord(j)
	if err != nil {
		n.fail(id, fmt.Sprintf("record: %v", err))
		return false
	}
	proc, err := n.cfg.Runner.Start(jobs.Launch{JobID: id, Argv: j.Spec.Command, Env: user.Env(env, j.Spec.Env), WorkDir: j.Spec.WorkDir,
		User: user, Record: rec})
	if err != nil {
		n.fail(id, fmt.Sprintf("start: %v", err))
		return false
	}
	if _, err := n.move(id, jobs.Running, "", func(j *jobs.Job) {
		j.PID, j.ShimPID, j.StartedAt = proc.PID, proc.ShimPID, proc.StartedAt
	}); err != nil {
		n.cfg.Log.Error("placement: job started but not recorded", "job", id, "err", err)
	}
	n.watch(ctx, id)
	return false
}

// maxEnvFailures is how many times what a job needs before its process
// (MPS daemon, scheduler, profile directory) may fail to start before the
// job fails.
const maxEnvFailures = 3

// fail marks a placed job failed.
func (n *Node) fail(id, reason string) {
	if _, err := n.move(id, jobs.Failed, reason, func(j *jobs.Job) { j.FinishedAt = n.cfg.Now() }); err != nil {
		n.cfg.Log.Error("placement: mark job failed", "job", id, "err", err)
	}
	n.causes = append(n.causes, "failure of job "+id)
}

// watch follows a running job until it exits.
func (n *Node) watch(ctx context.Context, id string) {
	if _, ok := n.watching[id]; ok {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	n.watching[id] = cancel
	ch := n.cfg.Runner.Wait(wctx, id)
	go func() {
		select {
		case e, ok := <-ch:
			if ok {
				select {
				case n.exits <- exitEvent{id: id, exit: e}:
				case <-wctx.Done():
				}
			}
		case <-wctx.Done():
		}
	}()
}

// restart stops a running job so that it can be placed again.
func (n *Node) restart(id, reason string) {
	if _, err := n.move(id, jobs.Restarting, reason, nil); err != nil {
		n.cfg.Log.Error("placement: restart job", "job", id, "err", err)
		return
	}
	n.stopping(id)
	n.stop(id)
}

// stop asks a job's supervisor to stop it; a request that fails is tried
// again at each decision.
func (n *Node) stop(id string) {
	n.resumeIfSuspended(id)
	if err := n.cfg.Runner.Stop(id, n.cfg.StopGrace); err != nil {
		n.cfg.Log.Error("stop job; trying again at the next decision", "job", id, "err", err)
		n.stopRetry[id] = true
	}
}

// exited records a job's end: succeeded or failed by its exit status; a
// job being restarted goes back to pending with its count raised; a
// cancelled one keeps its state and gets its exit status.
func (n *Node) exited(ctx context.Context, e exitEvent) {
	if stop, ok := n.watching[e.id]; ok {
		stop()
		delete(n.watching, e.id)
	}
	n.sloForget(e.id)
	j, ok := n.get(e.id)
	if !ok {
		return
	}
	n.stopped(e.id, j.Type())
	if _, profiling := n.phases[e.id]; profiling {
		n.collectProfiles() // the hook writes its trace at exit
	}
	ex := e.exit
	status := func(j *jobs.Job) {
		code := ex.Code
		j.ExitCode, j.Signal, j.FinishedAt, j.PID = &code, ex.Signal, ex.At, 0
	}
	ended := func() error {
		to, reason := jobs.Succeeded, ""
		if ex.Error != "" || ex.Code != 0 {
			to, reason = jobs.Failed, exitReason(ex)
			if ex.Error == "" {
				if why := n.memLimitReason(&j, reason); why != "" {
					reason = why
				}
			}
		}
		_, err := n.move(e.id, to, reason, status)
		n.causes = append(n.causes, "completion of job "+e.id)
		return err
	}
	var err error
	switch {
	case n.cancels[e.id] != "" && ex.Stopped && !j.State.Terminal():
		// Told to stop by a cancel whose record did not get written.
		_, err = n.move(e.id, jobs.Cancelled, n.cancels[e.id], status)
		if err == nil {
			delete(n.cancels, e.id)
		}
		n.causes = append(n.causes, "cancel of job "+e.id)
	case j.State == jobs.Running, j.State == jobs.Placed:
		err = ended()
	case j.State == jobs.Restarting && !ex.Stopped:
		// It ended on its own before the stop reached it: it is done,
		// not moved.
		err = ended()
	case j.State == jobs.Restarting:
		_, err = n.move(e.id, jobs.Pending, "restarting after a reconfiguration", func(j *jobs.Job) {
			j.Restarts++
			j.PID, j.ShimPID, j.Placement = 0, 0, nil
		})
		n.causes = append(n.causes, "restart of job "+e.id)
	case j.State == jobs.Cancelled:
		_, err = n.update(e.id, status)
		n.causes = append(n.causes, "cancel of job "+e.id)
	}
	if err != nil {
		// The store refused (a full disk): the exit is kept and tried
		// again, so that the job does not hold its place forever.
		n.cfg.Log.Error("job exit not recorded; trying again", "job", e.id, "err", err)
		go func() {
			select {
			case <-time.After(retryAfter):
			case <-ctx.Done():
				return
			}
			select {
			case n.exits <- e:
			case <-ctx.Done():
			}
		}()
	}
}

// exitReason says why a process ended badly.
func exitReason(e jobs.Exit) string {
	switch {
	case e.Error != "":
		return e.Error
	case e.Signal != "":
		return "killed by " + e.Signal
	default:
		return fmt.Sprintf("exit status %d", e.Code)
	}
}

// cancel cancels a job on the loop: a job not started yet is cancelled at
// once; a running one is stopped (SIGTERM, SIGKILL after the grace
// period) and cancelled, its exit status recorded when it ends; it holds
// its place until then (holdsInstance). A running job whose stop cannot
// reach its shim is not cancelled: it runs on, holding its place, with a
// reason that says the cancel is pending and why, the error wraps
// ErrCancelPending, and the stop is tried again every retryAfter
// (cancels) until it reaches the shim; the job is cancelled then.
func (n *Node) cancel(id, reason string) (jobs.Job, error) {
	j, ok := n.get(id)
	if !ok {
		return jobs.Job{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	if reason == "" {
		reason = "cancelled"
	}
	live := j.State == jobs.Running || j.State == jobs.Restarting || j.State == jobs.Placed
	if !live {
		j, err := n.move(id, jobs.Cancelled, reason, func(j *jobs.Job) { j.FinishedAt = n.cfg.Now() })
		if err != nil {
			return jobs.Job{}, err
		}
		n.causes = append(n.causes, "cancel of job "+id)
		return j, nil
	}
	if !j.State.CanMove(jobs.Cancelled) {
		return jobs.Job{}, &jobs.TransitionError{ID: id, From: j.State, To: jobs.Cancelled}
	}
	n.resumeIfSuspended(id)
	// The stop before the move: a job is not called cancelled while
	// nothing has told it to stop. Its exit cannot come between the two
	// (exits are taken on this loop), and until the move is recorded it
	// is in cancels, whose exit is a cancelled one.
	n.cancels[id] = reason
	err := n.cfg.Runner.Stop(id, n.cfg.StopGrace)
	notStarted := errors.Is(err, jobs.ErrNotStarted)
	if err != nil && !notStarted && !errors.Is(err, jobs.ErrSupervisorLost) {
		note := fmt.Sprintf("cancel pending: the process could not be told to stop (%v); mmkd tries again every %v", err, retryAfter)
		if _, uerr := n.update(id, func(j *jobs.Job) { j.Reason = note }); uerr != nil {
			n.cfg.Log.Error("cancel: record the pending cancel", "job", id, "err", uerr)
		}
		n.cfg.Log.Error("cancel: stop job; trying again", "job", id, "in", retryAfter, "err", err)
		return jobs.Job{}, fmt.Errorf("job %s: %w: its process runs on: %w", id, ErrCancelPending, err)
	}
	// Placed, never started: nothing runs, nothing will report. A lost
	// supervisor's job was killed; its Wait reports the loss.
	j, err = n.move(id, jobs.Cancelled, reason, func(j *jobs.Job) {
		if notStarted {
			j.FinishedAt = n.cfg.Now()
		}
	})
	if err != nil {
		n.cfg.Log.Error("cancel: the job is stopping but its cancel is not recorded; trying again", "job", id, "err", err)
		return jobs.Job{}, fmt.Errorf("job %s: %w: it is stopping, its cancel not yet recorded: %w", id, ErrCancelPending, err)
	}
	delete(n.cancels, id)
	n.causes = append(n.causes, "cancel of job "+id)
	return j, nil
}

// retryCancels tries again the cancels whose stop failed (cancel); it
// reports whether some are still pending.
func (n *Node) retryCancels() bool {
	for id, reason := range n.cancels {
		if j, ok := n.get(id); !ok || j.State.Terminal() {
			delete(n.cancels, id)
			continue
		}
		if _, err := n.cancel(id, reason); err == nil {
			n.cfg.Log.Info("cancel: the pending cancel is done", "job", id)
		}
	}
	return len(n.cancels) > 0
}

// serveAdopted gives the instances of the jobs recover adopted their MPS
// daemons (adopted too, if they still run) and kernel schedulers, whose
// hooks reconnect (they fail open meanwhile).
func (n *Node) serveAdopted(ctx context.Context) {
	gpus, err := n.readGPUs()
	if err != nil {
		n.cfg.Log.Error("recovery: read GPUs", "err", err)
		return
	}
	for _, id := range n.inState(jobs.Placed, jobs.Running, jobs.Restarting) {
		j, _ := n.get(id)
		pl := j.Placement
		if pl == nil {
			continue
		}
		gi := slices.IndexFunc(gpus, func(g gpuInfo) bool { return g.state.Index == pl.GPU })
		if gi < 0 || !slices.Contains(gpus[gi].keys, pl.InstanceKey) {
			continue
		}
		if n.cfg.MPS != nil {
			if _, err := n.cfg.MPS.Ensure(ctx, mps.Instance{Key: pl.InstanceKey, Device: pl.Device}); err != nil {
				n.cfg.Log.Error("recovery: MPS daemon", "instance", pl.InstanceKey, "err", err)
			}
		}
		if n.cfg.Sched != nil {
			if _, err := n.ensureScheduler(pl.InstanceKey, gpus[gi]); err != nil {
				n.cfg.Log.Error("recovery: kernel scheduler", "instance", pl.InstanceKey, "err", err)
			}
		}
	}
}

// recover adopts what the last mmkd left: a job whose process still runs
// is watched again (or stopped, if it was being stopped); one that ended
// meanwhile gets its true exit status; one placed but never started goes
// back to pending; one whose supervisor vanished without a record failed.
func (n *Node) recover(ctx context.Context) {
	for _, id := range n.inState(jobs.Placed, jobs.Running, jobs.Restarting, jobs.Cancelled) {
		j, _ := n.get(id)
		if j.State == jobs.Cancelled && (j.ExitCode != nil || j.PID == 0) {
			continue // ended, or never started
		}
		if j.IsClaim() {
			n.recoverClaim(j)
			continue
		}
		proc, exit, err := n.cfg.Runner.Adopt(id)
		switch {
		case exit != nil:
			n.cfg.Log.Info("recovery: job ended while mmkd was down", "job", id)
			n.exited(ctx, exitEvent{id: id, exit: *exit})
		case err == nil:
			n.cfg.Log.Info("recovery: adopted running job", "job", id, "pid", proc.PID)
			// A latency controller of the last mmkd may have left it
			// stopped (SIGSTOP): it runs on.
			if proc.PID > 0 {
				if err := syscall.Kill(-proc.PID, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
					n.cfg.Log.Warn("recovery: continue adopted job", "job", id, "err", err)
				}
			}
			if j.State == jobs.Placed {
				if _, err := n.move(id, jobs.Running, "adopted after a restart of mmkd", func(j *jobs.Job) {
					j.PID, j.ShimPID, j.StartedAt = proc.PID, proc.ShimPID, proc.StartedAt
				}); err != nil {
					n.cfg.Log.Error("recovery: record adopted job", "job", id, "err", err)
				}
			}
			if j.State == jobs.Restarting || j.State == jobs.Cancelled {
				n.stop(id)
			}
			n.watch(ctx, id)
		case j.State == jobs.Placed && errors.Is(err, jobs.ErrNotStarted):
			if _, err := n.move(id, jobs.Pending, "placed but not started when mmkd stopped", func(j *jobs.Job) { j.Placement = nil }); err != nil {
				n.cfg.Log.Error("recovery: requeue job", "job", id, "err", err)
			}
		default:
			reason := err.Error()
			if j.State == jobs.Cancelled {
				_, err = n.update(id, func(j *jobs.Job) { j.PID = 0 })
			} else {
				_, err = n.move(id, jobs.Failed, reason, func(j *jobs.Job) { j.FinishedAt, j.PID = n.cfg.Now(), 0 })
			}
			if err != nil {
				n.cfg.Log.Error("recovery: record lost job", "job", id, "err", err)
			}
		}
	}
}
