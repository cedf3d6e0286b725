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

// TestClaimNamesItsInstance (issue 37, item 5): a claim names its
// instance as everywhere ("gpu0/gi2"); the key drivers sent before
// ("gpu0-3g.40gb-at4") is still taken, and either way the job records the
// name, is granted there, and is the same live job for both (no
// conflict). A claim job recorded with a key before (the store keeps it
// across restarts) is still pinned to its instance; an unknown instance
// is refused naming the node's instances by name.
func TestClaimNamesItsInstance(t *testing.T) {
	m := fakeMPS(t)
	h := newHarnessWith(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}, false, curveEstimator{}, nil,
		func(c *Config) { c.MPS, c.PriorityShares = m, true })
	var name, key string
	for _, in := range h.n.Plan().GPUs[0].Instances {
		if in.Profile == "3g.40gb" {
			name, key = in.Name, in.Key
		}
	}
	if !strings.HasPrefix(name, "gpu0/gi") || key != "gpu0-3g.40gb-at4" {
		t.Fatalf("the 3g instance is %q, key %q", name, key)
	}
	byName, created, err := h.n.PrepareClaim(context.Background(), claimSpec("u-name", name, jobs.Offline, 1024))
	if err != nil || !created {
		t.Fatalf("prepare by name: %v %v", created, err)
	}
	byKey, _, err := h.n.PrepareClaim(context.Background(), claimSpec("u-key", key, jobs.Offline, 1024))
	if err != nil {
		t.Fatalf("prepare by key: %v", err)
	}
	for _, id := range []string{byName.ID, byKey.ID} {
		j := h.state(id, jobs.Running)
		if j.Spec.Claim.Instance != name || j.Placement.InstanceName != name {
			t.Errorf("claim job %s: instance %q, granted in %q; want %s", j.Spec.Claim.UID, j.Spec.Claim.Instance, j.Placement.InstanceName, name)
		}
	}
	// Prepared again under the other name of the same instance: the same
	// live job.
	for uid, ref := range map[string]string{"u-name": key, "u-key": name} {
		j, created, err := h.n.PrepareClaim(context.Background(), claimSpec(uid, ref, jobs.Offline, 1024))
		if err != nil || created {
			t.Errorf("prepare %s again as %s: created %v, %v", uid, ref, created, err)
		}
		if want, _ := h.n.Claim(uid); j.ID != want.ID {
			t.Errorf("prepare %s again as %s: job %s, want %s", uid, ref, j.ID, want.ID)
		}
	}
	var fe *jobs.FieldError
	if _, _, err := h.n.PrepareClaim(context.Background(), claimSpec("u-x", "gpu0/gi99", jobs.Online, 1)); !errors.As(err, &fe) || fe.Field != "claim.instance" || !strings.Contains(fe.Reason, name) || strings.Contains(fe.Reason, key) {
		t.Errorf("unknown instance: %v, want claim.instance naming %s", err, name)
	}
	// A claim job of before: pinned by its key as by its name.
	gpus, err := h.n.readGPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{name, key} {
		j := jobs.Job{Spec: claimSpec("u-old", ref, jobs.Offline, 1024)}
		if pin := claimPin(&j, gpus, []int{0}); pin == nil || gpus[0].names[pin.Instance] != name {
			t.Errorf("claim job pinned to %q: pin %+v, want %s", ref, pin, name)
		}
	}
	for _, uid := range []string{"u-name", "u-key"} {
		if _, _, err := h.n.ReleaseClaim(uid); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaimJobsRecordedByKey: claim jobs an mmkd before issue 37 recorded
// with the instance's key (the store keeps them across the upgrade's
// restart) go on: the granted one stays granted, the pending one is
// granted in its instance, and the driver, which now names the instance,
// prepares both again as the same jobs (no conflict).
func TestClaimJobsRecordedByKey(t *testing.T) {
	gpus := []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}
	key := "gpu0-3g.40gb-at4"
	store, _ := offlineParts(t)
	now := time.Now()
	ids := map[jobs.State]string{}
	for k, st := range []jobs.State{jobs.Running, jobs.Pending} {
		spec := claimSpec("u-"+string(st), key, jobs.Offline, 1024)
		spec.Name = "claim"
		id := jobs.NewID(now.Add(time.Duration(k) * time.Millisecond))
		if _, _, err := store.Create(jobs.Job{ID: id, Spec: spec, State: jobs.Pending, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if st == jobs.Running {
			pl := &jobs.Placement{GPU: 0, Instance: 1, Profile: "3g.40gb", InstanceKey: key, MPSPercent: 100}
			if _, err := store.Transition(id, jobs.Placed, now, "", func(j *jobs.Job) { j.Placement = pl }); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Transition(id, jobs.Running, now, "", func(j *jobs.Job) { j.Grant = &jobs.Grant{Env: []string{"A=b"}} }); err != nil {
				t.Fatal(err)
			}
		}
		ids[st] = id
	}
	m := fakeMPS(t)
	h := newHarnessWith(t, gpus, false, curveEstimator{}, nil, func(c *Config) { c.Store, c.MPS, c.PriorityShares = store, m, true })
	var name string
	for _, in := range h.n.Plan().GPUs[0].Instances {
		if in.Key == key {
			name = in.Name
		}
	}
	for st, id := range ids {
		j := h.state(id, jobs.Running)
		if j.Placement.InstanceKey != key {
			t.Errorf("the %s claim job of before runs in %s, want %s", st, j.Placement.InstanceKey, key)
		}
		again, created, err := h.n.PrepareClaim(context.Background(), claimSpec(j.Spec.Claim.UID, name, jobs.Offline, 1024))
		if err != nil || created || again.ID != id {
			t.Errorf("the %s claim job of before prepared again as %s: job %s, created %v, %v; want %s", st, name, again.ID, created, err, id)
		}
		if _, _, err := h.n.ReleaseClaim(j.Spec.Claim.UID); err != nil {
			t.Fatal(err)
		}
	}
}
