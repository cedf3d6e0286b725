package node

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

// errNotAJob is a process connecting to a kernel scheduler that is no
// process of a job of this instance.
var errNotAJob = errors.New("not a process of a job of this instance")

// identifyTask is the kernel scheduler's Config.Identify for instance
// key: a connecting process must belong to a job of mmkd's placed on
// that instance and run as that job's user; the task's priority, kind,
// task key and name are the job's, whatever its hook declares (a job's
// environment is the job's to change).
func (n *Node) identifyTask(key string) func(server.Peer) (server.Identity, error) {
	return func(p server.Peer) (server.Identity, error) {
		j, err := n.jobOfProcess(p.PID, key)
		if err != nil {
			return server.Identity{}, fmt.Errorf("process %d (uid %d): %w", p.PID, p.UID, err)
		}
		uid := os.Geteuid()
		if j.Owner != nil {
			uid = j.Owner.UID
		}
		if p.UID != uid {
			return server.Identity{}, fmt.Errorf("process %d runs as uid %d, its job %s as uid %d", p.PID, p.UID, j.ID, uid)
		}
		id := server.Identity{Priority: j.Priority, Online: j.Online(), TaskKey: j.TaskKey, Name: truncate(j.Spec.Name, 63), Job: j.ID}
		if j.Online() && n.cfg.SLO != nil {
			t := j.Target(n.cfg.SLO.Default)
			id.Target = &t
			id.RestrainOthers = n.cfg.SLO.mayRestrainOthers(j)
		}
		return id, nil
	}
}

// jobOfProcess finds the job on instance key that process pid belongs
// to: by its cgroup (a job's, where cgroup v2 is used: it holds every
// process of the job), else by its process group, which the job's first
// process leads (for a job just started, whose pid the node has not
// recorded yet, the shim's pid record tells).
func (n *Node) jobOfProcess(pid int, key string) (jobs.Job, error) {
	on := func(j jobs.Job) bool {
		return holdsInstance(&j) && j.Placement.InstanceKey == key
	}
	if id := jobs.JobOfProcess(pid); id != "" {
		if j, ok := n.get(id); ok && on(j) {
			return j, nil
		}
		return jobs.Job{}, fmt.Errorf("its job %s is not placed on this instance: %w", id, errNotAJob)
	}
	pg, err := jobs.ProcessGroup(pid)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("%w: %v", errNotAJob, err)
	}
	var starting []jobs.Job
	n.mu.RLock()
	for _, j := range n.order {
		if !on(*j) {
			continue
		}
		if j.PID == pg {
			n.mu.RUnlock()
			return *j, nil
		}
		if j.PID == 0 {
			starting = append(starting, *j)
		}
	}
	n.mu.RUnlock()
	for _, j := range starting {
		if pid := n.cfg.Runner.StartedPID(j.ID); pid != 0 && pid == pg {
			return j, nil
		}
	}
	return jobs.Job{}, errNotAJob
}

// schedulerSocket is the socket a job's hook connects to: the instance's
// kernel scheduler's own (0600, mmkd's) for a job of mmkd's user, else a
// socket of the job's user (0600, theirs) the same server serves.
func (n *Node) schedulerSocket(j *jobs.Job, g gpuInfo) (string, error) {
	key := j.Placement.InstanceKey
	sock, err := n.ensureScheduler(key, g)
	if err != nil || j.Owner == nil || j.Owner.UID == os.Geteuid() {
		return sock, err
	}
	n.mu.RLock()
	s := n.scheds[key]
	n.mu.RUnlock()
	if s == nil {
		return "", fmt.Errorf("kernel scheduler of %s: gone", key)
	}
	user := strings.TrimSuffix(sock, ".sock") + ".u" + strconv.Itoa(j.Owner.UID) + ".sock"
	if err := s.srv.Listen(user, j.Owner.UID, j.Owner.GID); err != nil {
		return "", fmt.Errorf("kernel scheduler of %s for uid %d: %w", key, j.Owner.UID, err)
	}
	return user, nil
}
