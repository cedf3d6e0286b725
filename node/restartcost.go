package node

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// assumedStartup is a restarted job's start-up until its first CUDA call
// where mmkd has measured none for its type (the kernel scheduler times
// it; without the hook nothing does). It is about what the H100 run
// measured for PyTorch trainers started six at once (11-20 s from launch
// to the first iteration, docs/results/mmkd-e2e-h100.md), rounded up.
const assumedStartup = 20 * time.Second

// restartBook is what mmkd measured of restarts, for the restart gate
// (partitioner.DecideGated): per job type the last stop (SIGTERM to exit)
// and start-up (start to the first CUDA call, which the kernel
// scheduler sees as the hook's connect), and per running job its first
// CUDA call. It is safe for concurrent use: connects arrive on the
// schedulers' goroutines.
type restartBook struct {
	mu      sync.Mutex
	stopAt  map[string]time.Time     // job id: when its restart's SIGTERM went
	gpuAt   map[string]time.Time     // job id: its first CUDA call in this run
	stop    map[string]time.Duration // job type: last measured stop
	startup map[string]time.Duration // job type: last measured start-up
}

func newRestartBook() *restartBook {
	return &restartBook{stopAt: map[string]time.Time{}, gpuAt: map[string]time.Time{}, stop: map[string]time.Duration{}, startup: map[string]time.Duration{}}
}

// connected records the first CUDA call of the job whose process group
// pid is in (a kernel scheduler's OnConnect).
func (n *Node) connected(pid int) {
	n.connectedAt(pid, n.cfg.Now())
}

// connectedAt is connected at time now.
func (n *Node) connectedAt(pid int, now time.Time) {
	pg, err := jobs.ProcessGroup(pid)
	if err != nil {
		n.cfg.Log.Debug("restart costs: connecting task", "pid", pid, "err", err)
		return
	}
	n.mu.RLock()
	var id, typ string
	var started time.Time
	for _, j := range n.order {
		if j.PID == pg && j.State == jobs.Running {
			id, typ, started = j.ID, j.Type(), j.StartedAt
			break
		}
	}
	n.mu.RUnlock()
	if id == "" || started.IsZero() {
		return
	}
	b := n.restarts
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.gpuAt[id]; ok {
		return // a second process of the job, or a reconnect
	}
	b.gpuAt[id] = now
	b.startup[typ] = max(now.Sub(started), 0)
}

// stopping records when a restart's SIGTERM went to job id.
func (n *Node) stopping(id string) {
	b := n.restarts
	b.mu.Lock()
	b.stopAt[id] = n.cfg.Now()
	b.mu.Unlock()
}

// stopped records a job's exit: a restart's stop time for its type, and
// the end of its run.
func (n *Node) stopped(id, typ string) {
	now := n.cfg.Now()
	b := n.restarts
	b.mu.Lock()
	defer b.mu.Unlock()
	if at, ok := b.stopAt[id]; ok {
		b.stop[typ] = max(now.Sub(at), 0)
		delete(b.stopAt, id)
	}
	delete(b.gpuAt, id)
}

// restartCost is what restarting running job j costs now (the gate's
// partitioner.RestartCost) and where each part comes from, for the log:
//
//   - stop: the last measured stop of its type, else StopGrace (the
//     longest mmkd waits);
//   - start-up to its first CUDA call: its own, else its type's last,
//     else assumedStartup;
//   - lost work: the time since its newest checkpoint file written in
//     this run; none if its newest checkpoint is older than this run (it
//     saved one when an earlier restart stopped it, so it saves on
//     SIGTERM as the contract asks; the save is in its stop time); all
//     of this run if it has no checkpoint.
//
// Its horizon is how long this run has lasted: a job that has run t is
// taken to run about t more.
func (n *Node) restartCost(j *jobs.Job, now time.Time) (partitioner.RestartCost, string) {
	b := n.restarts
	typ := j.Type()
	b.mu.Lock()
	stop, stopSrc := b.stop[typ], "measured"
	if _, ok := b.stop[typ]; !ok {
		stop, stopSrc = n.cfg.StopGrace, "assumed"
	}
	startup, startSrc := time.Duration(0), "measured"
	if at, ok := b.gpuAt[j.ID]; ok {
		startup = at.Sub(j.StartedAt)
	} else if d, ok := b.startup[typ]; ok {
		startup = d
	} else {
		startup, startSrc = assumedStartup, "assumed"
	}
	b.mu.Unlock()
	run := max(now.Sub(j.StartedAt), 0)
	lost, lostSrc := run, "no checkpoint"
	if newest, err := n.newestCheckpoint(j.ID); err != nil {
		lostSrc = fmt.Sprintf("checkpoint unreadable: %v", err)
	} else if !newest.IsZero() {
		if newest.Before(j.StartedAt) {
			lost, lostSrc = 0, "saves on stop"
		} else {
			lost, lostSrc = max(now.Sub(newest), 0), "since checkpoint"
		}
	}
	c := partitioner.RestartCost{Lost: (stop + startup + lost).Seconds(), Horizon: run.Seconds()}
	desc := fmt.Sprintf("%s: stop %.1fs %s + start-up %.1fs %s + lost %.1fs %s, running %.0fs",
		j.ID, stop.Seconds(), stopSrc, startup.Seconds(), startSrc, lost.Seconds(), lostSrc, run.Seconds())
	return c, desc
}

// newestCheckpoint is the modification time of the newest file in job
// id's checkpoint directory (zero when it holds none).
func (n *Node) newestCheckpoint(id string) (time.Time, error) {
	dir, err := n.cfg.Runner.CheckpointDir(id)
	if err != nil {
		return time.Time{}, err
	}
	var newest time.Time
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("checkpoint of job %s: %w", id, err)
	}
	return newest, nil
}

// gateCosts answers the restart gate for the decision at now: running
// jobs by their restart cost (each described in descs, for the log);
// jobs already stopping are free (not known).
func (n *Node) gateCosts(now time.Time, descs map[string]string) func(string) (partitioner.RestartCost, bool) {
	return func(id string) (partitioner.RestartCost, bool) {
		j, ok := n.get(id)
		if !ok || j.State != jobs.Running {
			return partitioner.RestartCost{}, false
		}
		c, desc := n.restartCost(&j, now)
		descs[id] = desc
		return c, true
	}
}
