package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

func claimSpec(uid, instance string, kind jobs.Kind, memMiB int64) jobs.Spec {
	return jobs.Spec{Kind: kind, MemoryMiB: memMiB, Claim: &jobs.Claim{Namespace: "ns", Name: "claim-" + uid, UID: uid, Instance: instance, Pods: []string{"ns/pod-" + uid}}}
}

func envOf(g *jobs.Grant) map[string]string {
	out := map[string]string{}
	if g == nil {
		return out
	}
	for _, kv := range g.Env {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// TestClaimJobs: an online and an offline claim on one GPU under MPS with
// priority shares are placed beside a job of mmk's own at the shares and
// client priorities Algorithm 1 gives (100 % each; online 0, offline 1),
// granted their environment without a process, kept from a cancel, and
// ended by their release, which frees their place.
func TestClaimJobs(t *testing.T) {
	m := fakeMPS(t)
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) { c.MPS, c.PriorityShares = m, true })
	script, gate := gated(t, "0")
	own := h.submit(sh("own", script, ""))
	h.state(own.ID, jobs.Running)

	on, created, err := h.n.PrepareClaim(context.Background(), claimSpec("u-on", "gpu0", jobs.Online, 8192))
	if err != nil || !created {
		t.Fatalf("prepare online claim: %v %v", created, err)
	}
	off, _, err := h.n.PrepareClaim(context.Background(), claimSpec("u-off", "gpu0", jobs.Offline, 8192))
	if err != nil {
		t.Fatal(err)
	}
	uuid := h.state(own.ID, jobs.Running).Placement.Device
	for _, tc := range []struct {
		id, prio string
	}{{on.ID, "0"}, {off.ID, "1"}} {
		j := h.state(tc.id, jobs.Running)
		env := envOf(j.Grant)
		if j.PID != 0 || j.Placement.InstanceKey != "gpu0" || j.Placement.MPSPercent != 100 {
			t.Errorf("claim job %s: pid %d, placement %+v; want no process, gpu0 at 100 %%", j.Spec.Name, j.PID, j.Placement)
		}
		want := map[string]string{"CUDA_VISIBLE_DEVICES": uuid, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100", "CUDA_MPS_CLIENT_PRIORITY": tc.prio, "MMK_JOB_ID": j.ID}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("claim job %s: %s=%q, want %q", j.Spec.Name, k, env[k], v)
			}
		}
		for _, k := range []string{"PATH", "MMK_CHECKPOINT_DIR", "MMK_RESTART_COUNT"} {
			if _, ok := env[k]; ok {
				t.Errorf("claim job %s is granted %s", j.Spec.Name, k)
			}
		}
		pipe := env["CUDA_MPS_PIPE_DIRECTORY"]
		if pipe == "" || !slices.Contains(j.Grant.Mounts, jobs.Mount{Path: pipe}) {
			t.Errorf("claim job %s: pipe %q not among the mounts %+v", j.Spec.Name, pipe, j.Grant.Mounts)
		}
	}

	// Preparing again is idempotent; on another instance it conflicts;
	// on an instance the node lacks it is refused with the field.
	again, created, err := h.n.PrepareClaim(context.Background(), claimSpec("u-on", "gpu0", jobs.Online, 8192))
	if err != nil || created || again.ID != on.ID {
		t.Errorf("prepare again: job %s created %v err %v; want %s, not created", again.ID, created, err, on.ID)
	}
	var fe *jobs.FieldError
	if _, _, err := h.n.PrepareClaim(context.Background(), claimSpec("u-x", "gpu7", jobs.Online, 1)); !errors.As(err, &fe) || fe.Field != "claim.instance" {
		t.Errorf("unknown instance: %v", err)
	}
	if _, err := h.n.Cancel(on.ID, "no"); !errors.Is(err, ErrClaimJob) {
		t.Errorf("cancel of a claim job: %v, want ErrClaimJob", err)
	}
	if j, err := h.n.Claim("u-off"); err != nil || j.ID != off.ID {
		t.Errorf("Claim(u-off) = %s, %v", j.ID, err)
	}

	j, ok, err := h.n.ReleaseClaim("u-on")
	if err != nil || !ok || j.State != jobs.Succeeded {
		t.Fatalf("release: %s %v %v", j.State, ok, err)
	}
	if _, ok, err := h.n.ReleaseClaim("u-on"); err != nil || ok {
		t.Errorf("second release: %v %v, want nothing to do", ok, err)
	}
	// Released, the claim may be prepared again: a new job.
	re, created, err := h.n.PrepareClaim(context.Background(), claimSpec("u-on", "gpu0", jobs.Online, 8192))
	if err != nil || !created || re.ID == on.ID {
		t.Errorf("prepare after release: %s created %v err %v", re.ID, created, err)
	}
	h.state(re.ID, jobs.Running)
	if _, _, err := h.n.ReleaseClaim("u-on"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.n.ReleaseClaim("u-off"); err != nil {
		t.Fatal(err)
	}
	open(t, gate)
	h.state(own.ID, jobs.Succeeded)
}

// TestClaimWaitsForItsInstance: a claim pinned to a MIG instance whose
// memory mmk's own job holds waits there, pending, while a job of mmk's
// of the same size goes to the other instance; once the first job ends
// the claim is granted in its instance.
func TestClaimWaitsForItsInstance(t *testing.T) {
	h := newHarness(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}, false, curveEstimator{})
	script, gate := gated(t, "0")
	big := sh("big", script, "")
	big.MemoryMiB = 30_000
	first := h.state(h.submit(big).ID, jobs.Running)
	inst := first.Placement.InstanceKey
	c, _, err := h.n.PrepareClaim(context.Background(), claimSpec("u1", inst, jobs.Offline, 30_000))
	if err != nil {
		t.Fatal(err)
	}
	script2, gate2 := gated(t, "0")
	big2 := sh("big2", script2, "")
	big2.MemoryMiB = 30_000
	other := h.state(h.submit(big2).ID, jobs.Running)
	if other.Placement.InstanceKey == inst {
		t.Fatalf("second job in %s too", inst)
	}
	if j, _ := h.n.Job(c.ID); j.State != jobs.Pending {
		t.Fatalf("claim is %s, want pending behind the first job", j.State)
	}
	open(t, gate)
	if j := h.state(c.ID, jobs.Running); j.Placement.InstanceKey != inst {
		t.Errorf("claim granted in %s, want %s", j.Placement.InstanceKey, inst)
	}
	open(t, gate2)
	if _, _, err := h.n.ReleaseClaim("u1"); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverClaims: after a restart of mmkd a granted claim job goes on
// (no process to adopt), and one placed but not granted waits again.
func TestRecoverClaims(t *testing.T) {
	store, runner := offlineParts(t)
	now := time.Now()
	pl := &jobs.Placement{GPU: 0, InstanceKey: "gpu0", MPSPercent: 100}
	ids := map[jobs.State]string{}
	for k, st := range []jobs.State{jobs.Running, jobs.Placed} {
		spec := claimSpec("u"+string(st), "gpu0", jobs.Offline, 1024)
		spec.Name = "claim"
		id := jobs.NewID(now.Add(time.Duration(k) * time.Millisecond))
		if _, _, err := store.Create(jobs.Job{ID: id, Spec: spec, State: jobs.Pending, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Transition(id, jobs.Placed, now, "", func(j *jobs.Job) { j.Placement = pl }); err != nil {
			t.Fatal(err)
		}
		if st == jobs.Running {
			if _, err := store.Transition(id, jobs.Running, now, "", func(j *jobs.Job) { j.Grant = &jobs.Grant{Env: []string{"A=b"}} }); err != nil {
				t.Fatal(err)
			}
		}
		ids[st] = id
	}
	n := recovered(t, store, runner)
	if j, _ := n.Job(ids[jobs.Running]); j.State != jobs.Running || j.Grant == nil {
		t.Errorf("granted claim after recovery: %s, grant %v", j.State, j.Grant)
	}
	if j, _ := n.Job(ids[jobs.Placed]); j.State != jobs.Pending || j.Placement != nil {
		t.Errorf("placed claim after recovery: %s, placement %v", j.State, j.Placement)
	}
}
