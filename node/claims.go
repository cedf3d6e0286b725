package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// Claim jobs are the seam between mmkd and Kubernetes (docs/kubernetes.md).
// The DRA driver (cmd/mmk-dra) submits one per prepared ResourceClaim,
// pinned to the instance the cluster's scheduler allocated. Algorithm 1
// places it there beside mmkd's own jobs (partitioner.Pin): it decides
// its MPS share and client priority, and the job's environment is built
// as for any job; but instead of starting a process the node records the
// environment and the host paths it names as the job's Grant and marks the
// job running. The kubelet starts the pod's containers with them (CDI
// edits). The job ends when the claim is unprepared (ReleaseClaim), never
// on a cancel from mmk's side: mmk cannot stop a process it did not
// start, so it never restarts or moves one either.

// ErrClaimJob is a request that a claim job cannot honour: it ends only
// when Kubernetes unprepares its claim.
var ErrClaimJob = errors.New("a claim job ends when Kubernetes unprepares its claim")

// ErrClaimConflict is a claim prepared again with another instance
// while its first preparation still holds one.
var ErrClaimConflict = errors.New("the claim is prepared on another instance")

// PrepareClaim submits the claim job of spec.Claim, or returns the live
// one the claim already has (false): preparing is idempotent, as the
// kubelet asks again after a restart. A claim whose earlier job ended (it
// was unprepared) gets a new job. The instance must exist on the node.
func (n *Node) PrepareClaim(ctx context.Context, spec jobs.Spec) (jobs.Job, bool, error) {
	c := spec.Claim
	if c == nil {
		return jobs.Job{}, false, &jobs.FieldError{Field: "claim", Value: "", Reason: "a claim job names its claim"}
	}
	if spec.Name == "" {
		spec.Name = truncate("claim "+c.Namespace+"/"+c.Name, jobs.MaxNameLen)
	}
	if err := spec.Validate(); err != nil {
		return jobs.Job{}, false, err
	}
	if keys := n.instanceKeys(); !slices.Contains(keys, c.Instance) {
		return jobs.Job{}, false, &jobs.FieldError{Field: "claim.instance", Value: c.Instance,
			Reason: fmt.Sprintf("no such instance on this node (it has %s)", strings.Join(keys, ", "))}
	}
	n.claimMu.Lock()
	defer n.claimMu.Unlock()
	if j, ok := n.liveClaim(c.UID); ok {
		if j.Spec.Claim.Instance != c.Instance {
			return jobs.Job{}, false, fmt.Errorf("claim %s: job %s holds instance %s, asked for %s: %w", c.UID, j.ID, j.Spec.Claim.Instance, c.Instance, ErrClaimConflict)
		}
		return j, false, nil
	}
	return n.Submit(ctx, spec, "", nil)
}

// Claim returns the newest job of a claim; jobs.ErrNotFound if it has
// none.
func (n *Node) Claim(uid string) (jobs.Job, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for i := len(n.order) - 1; i >= 0; i-- {
		if j := n.order[i]; j.IsClaim() && j.Spec.Claim.UID == uid {
			return *j, nil
		}
	}
	return jobs.Job{}, fmt.Errorf("claim %s: %w", uid, jobs.ErrNotFound)
}

// liveClaim is the claim's job that has not ended, if any.
func (n *Node) liveClaim(uid string) (jobs.Job, bool) {
	j, err := n.Claim(uid)
	if err != nil || j.State.Terminal() {
		return jobs.Job{}, false
	}
	return j, true
}

// ReleaseClaim ends a claim's job on the placement loop, which then
// decides again (the share is free): a granted job succeeds, one not
// placed yet is cancelled. A claim without a live job is released already
// (the kubelet may ask twice); ok is false then.
func (n *Node) ReleaseClaim(uid string) (j jobs.Job, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if lerr := n.onLoop(ctx, func() { j, ok, err = n.release(uid) }); lerr != nil {
		return jobs.Job{}, false, fmt.Errorf("release claim %s: %w: %w", uid, ErrNotReady, lerr)
	}
	return j, ok, err
}

func (n *Node) release(uid string) (jobs.Job, bool, error) {
	n.claimMu.Lock()
	defer n.claimMu.Unlock()
	j, ok := n.liveClaim(uid)
	if !ok {
		return jobs.Job{}, false, nil
	}
	to, reason := jobs.Succeeded, "claim unprepared"
	if j.State != jobs.Running {
		to, reason = jobs.Cancelled, "claim unprepared before it was placed"
	}
	j, err := n.move(j.ID, to, reason, func(j *jobs.Job) { j.FinishedAt = n.cfg.Now() })
	if err != nil {
		return jobs.Job{}, false, err
	}
	n.causes = append(n.causes, "release of claim job "+j.ID)
	return j, true, nil
}

// grant marks a placed claim job running with its environment: what a
// process of its would have started with, less the base environment and
// the checkpoint contract (the pod has its own), and the host paths that
// environment names.
func (n *Node) grant(id string, env []string) {
	g := claimGrant(env)
	if _, err := n.move(id, jobs.Running, "granted to the claim's pods", func(j *jobs.Job) {
		j.Grant, j.StartedAt = &g, n.cfg.Now()
	}); err != nil {
		n.cfg.Log.Error("placement: claim job granted but not recorded", "job", id, "err", err)
	}
}

// notForClaims are variables of a job's environment that a claim's pods
// do not get: the pod keeps its own state.
var notForClaims = []string{"MMK_CHECKPOINT_DIR", "MMK_RESTART_COUNT"}

// pathVar is a variable of a job's environment that names a host path
// a pod must see at the same path: the path itself, or its directory
// (parent: a socket, a file the hook writes), read-only where the pod
// only reads it.
type pathVar struct {
	name             string
	parent, readOnly bool
}

var pathVars = []pathVar{
	{"CUDA_MPS_PIPE_DIRECTORY", false, false},
	{"CUDA_MPS_LOG_DIRECTORY", false, false},
	{"CUDA_INJECTION64_PATH", false, true},
	{"MMK_CUPTI_PATH", false, true},
	{"MMK_SCHED_SOCKET", true, false},
	{"MMK_PROFILE_OUT", true, false},
}

// claimGrant keeps what mmk sets of a job's environment (the claim's spec
// holds no variables, so the rest is mmkd's own) and lists the mounts it
// needs.
func claimGrant(env []string) jobs.Grant {
	g := jobs.Grant{Env: []string{}, Mounts: []jobs.Mount{}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !(jobs.ReservedEnv(k) || strings.HasPrefix(k, "CUDA_MPS_")) || slices.Contains(notForClaims, k) {
			continue
		}
		g.Env = append(g.Env, kv)
		i := slices.IndexFunc(pathVars, func(p pathVar) bool { return p.name == k })
		if i < 0 || v == "" {
			continue
		}
		m := jobs.Mount{Path: v, ReadOnly: pathVars[i].readOnly}
		if pathVars[i].parent {
			m.Path = filepath.Dir(v)
		}
		if !slices.Contains(g.Mounts, m) {
			g.Mounts = append(g.Mounts, m)
		}
	}
	return g
}

// claimPin is where a claim job must go: the request position of the GPU
// holding its instance and the instance's index; nil when the instance is
// gone (the job waits, and its driver republishes the devices).
func claimPin(j *jobs.Job, gpus []gpuInfo, placedOn []int) *partitioner.Pin {
	for p, g := range placedOn {
		if i := slices.Index(gpus[g].keys, j.Spec.Claim.Instance); i >= 0 {
			return &partitioner.Pin{GPU: p, Instance: i}
		}
	}
	return nil
}

// instanceKeys are the keys of the instances the node places on.
func (n *Node) instanceKeys() []string {
	v := n.Plan()
	var keys []string
	for _, g := range v.GPUs {
		for _, in := range g.Instances {
			keys = append(keys, in.Key)
		}
	}
	return keys
}

// recoverClaim adopts a claim job the last mmkd left: a granted one goes
// on (its pods run; serveAdopted gives its instance its MPS daemon and
// scheduler again), one placed but not granted goes back to pending.
func (n *Node) recoverClaim(j jobs.Job) {
	if j.State != jobs.Placed {
		return
	}
	if _, err := n.move(j.ID, jobs.Pending, "placed but not granted when mmkd stopped", func(j *jobs.Job) { j.Placement = nil }); err != nil {
		n.cfg.Log.Error("recovery: requeue claim job", "job", j.ID, "err", err)
	}
}
