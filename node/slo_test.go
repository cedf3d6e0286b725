package node

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/slo"
)

// procState is a process's state letter from /proc (T: stopped).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// sloNode is a node on one fake H200 whose kernel scheduler runs the
// latency controller on a ladder of priority and suspend, under MPS with
// priority shares (so that online and offline jobs run at once, as
// mmkd's default places them); gpu is the fake GPU's timeline its jobs
// share, replay the fake job, dir a directory for their traces.
type sloNode struct {
	h                *harness
	dir, gpu, replay string
}

// newSLONode starts an sloNode; extra, if set, edits its config.
func newSLONode(t *testing.T, extra func(*Config)) sloNode {
	t.Helper()
	hook, cupti, replay := buildHookFakes(t)
	dir := t.TempDir()
	ladder, err := slo.ParseLadder([]string{"priority", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	sc := &SchedConfig{Policy: "fifo", Hook: hook, Cupti: cupti, SocketDir: filepath.Join(dir, "run"), ProfileDir: filepath.Join(dir, "profiles")}
	m := fakeMPS(t)
	h := newHarnessWith(t, h200, false, curveEstimator{}, sc, func(c *Config) {
		c.MPS, c.PriorityShares = m, true
		c.SLO = &SLOConfig{Controller: slo.Config{Ladder: ladder, Settle: 100 * time.Millisecond, Tick: 200 * time.Millisecond}}
		if extra != nil {
			extra(c)
		}
	})
	return sloNode{h: h, dir: dir, gpu: filepath.Join(dir, "gpu"), replay: replay}
}

// write writes a trace for the fake job and returns its path.
func (s sloNode) write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(s.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSLOControllerOnTheNode: an online job with a target it cannot meet
// beside an offline one on the same GPU (the fake GPU runs their kernels
// one at a time, so the offline kernels slow the online requests). The
// instance's controller measures the online job's requests (its hook
// marks them), climbs to suspending the offline job (its processes stop,
// and the job's events say why), shows the online job's standing, history
// and the decisions; cancelling the suspended job resumes it first, so
// that it ends.
func TestSLOControllerOnTheNode(t *testing.T) {
	sn := newSLONode(t, nil)
	h, gpu, replay := sn.h, sn.gpu, sn.replay
	svc := sn.write(t, "svc.txt", strings.Repeat("s 4 1 1 128 1 1 200 20\n", 4)+"sync 2000\n")
	train := sn.write(t, "train.txt", "t 4 1 1 128 1 1 2000 0\nsync 0\n")
	off := h.submit(jobs.Spec{Name: "train", Kind: jobs.Offline, Command: []string{"env", "MMK_FAKE_GPU=" + gpu, replay, train, "0", "60"}})
	off = h.state(off.ID, jobs.Running)
	on := h.submit(jobs.Spec{Name: "svc", Kind: jobs.Online, SLO: "p99=100us", Command: []string{"env", "MMK_FAKE_GPU=" + gpu, replay, svc, "0", "60"}})
	on = h.state(on.ID, jobs.Running)
	deadline := time.Now().Add(30 * time.Second)
	var view SLOView
	for {
		view = h.n.SLO()
		// The job is stopped after the rung is in force (the controller's
		// Suspend): the view lists it once it is.
		if len(view.Instances) == 1 && view.Instances[0].Rung == "suspend" && len(view.Instances[0].Suspended) > 0 && len(view.Jobs) == 1 && view.Jobs[0].Requests > 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no suspension in 30 s: %+v", view)
		}
		time.Sleep(50 * time.Millisecond)
	}
	js := view.Jobs[0]
	// Every request is late but for a stray one or two: under a loaded
	// run (-race, every package at once) one of 57 once read in time.
	if js.ID != on.ID || js.Target != "p99=100µs" || js.BoundMs != 0.1 || js.Source != "hook" || !js.Live || js.Requests-js.Late > 2 {
		t.Errorf("the online job's view %+v", js)
	}
	if got := view.Instances[0].Suspended; len(got) != 1 || got[0] != off.ID {
		t.Errorf("suspended %v, want the offline job", got)
	}
	// The instance's view says what it does to each offline job, as the
	// job's own view does (the dashboard reads every restraint at once).
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if r := h.n.SLO().Instances[0].Restrained[off.ID]; r != nil && r.State == "suspended" && slices.Contains(r.For, on.ID) {
			break
		}
	}
	if r := h.n.SLO().Instances[0].Restrained[off.ID]; r == nil || r.State != "suspended" || !slices.Contains(r.For, on.ID) {
		t.Errorf("the instance's restraint of the offline job: %+v", r)
	}
	off, _ = h.n.Job(off.ID)
	// Stopped: its cgroup frozen (a frozen task reads as sleeping), or,
	// without one, its process group stopped.
	stopped := func() bool {
		frozen, err := jobs.ProcessFrozen(off.PID)
		return procState(t, off.PID) == "T" || (err == nil && frozen)
	}
	for end := time.Now().Add(10 * time.Second); !stopped(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the offline job's process is %q, its cgroup not frozen", procState(t, off.PID))
		}
	}
	one, err := h.n.JobSLO(on.ID)
	if err != nil || one.SLO == nil || len(one.History) == 0 || len(one.Decisions) == 0 ||
		!strings.Contains(one.Decisions[len(one.Decisions)-1].Reason, "priority -> suspend: tighten: ") {
		t.Fatalf("job slo %+v %v", one, err)
	}
	// The job says it is restrained, for whom and why, in the API's job
	// and list (issue 53, item 3); the controller may probe a rung below
	// for a moment, so the test looks until it sees it.
	restrained := func(j jobs.Job) bool {
		r := j.Restraint
		return r != nil && r.State == "suspended" && slices.Contains(r.For, on.ID) && r.Reason != ""
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if j, err := h.n.Job(off.ID); err == nil && restrained(j) {
			break
		}
	}
	for _, got := range func() []jobs.Job {
		one, err := h.n.Job(off.ID)
		if err != nil {
			t.Fatal(err)
		}
		all, err := h.n.Jobs(JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return append(slices.DeleteFunc(all, func(j jobs.Job) bool { return j.ID != off.ID }), one)
	}() {
		if !restrained(got) {
			t.Errorf("the suspended job's restraint: %+v", got.Restraint)
		}
	}
	// The decision's notes go to the job's events once its rung is
	// applied: they may follow the stopped process by a moment.
	var notes []string
	for end := time.Now().Add(5 * time.Second); len(notes) < 2 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		evs, err := h.n.Events(off.ID)
		if err != nil {
			t.Fatal(err)
		}
		notes = notes[:0]
		for _, e := range evs {
			if strings.HasPrefix(e.Reason, "slo: ") {
				notes = append(notes, e.Reason)
			}
		}
	}
	// The note names the job it was suspended for, its owner and numbers
	// (issue 54: the victim's events name who caused it).
	want := "slo: suspended by its instance's latency controller for the target of job " + on.ID + " (svc, " + on.Owner.String() + "): "
	if len(notes) < 2 || !strings.Contains(strings.Join(notes, "\n"), want) || !strings.Contains(strings.Join(notes, "\n"), "(decision: ") {
		t.Errorf("the offline job's notes: %q, want one with %q and the decision", notes, want)
	}
	// Cancelled while stopped: resumed first, it ends on SIGTERM.
	if _, err := h.n.Cancel(off.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.until(off.ID, "ended", func(j jobs.Job) bool { return j.ExitCode != nil || j.Signal != "" })
}

// TestUnhookedOfflineJob (issue 54, item 2): an offline job whose hook
// never connects (here a plain process) runs unseen by its instance's
// kernel scheduler: the SLO view lists it unrestrainable, and the online
// job's requests beside it are not taken as measured alone. Before,
// every request counted as alone while it ran.
func TestUnhookedOfflineJob(t *testing.T) {
	sn := newSLONode(t, func(c *Config) { c.SLO.UnrestrainableAfter = 100 * time.Millisecond })
	h, gpu, replay := sn.h, sn.gpu, sn.replay
	svc := sn.write(t, "svc.txt", strings.Repeat("s 4 1 1 128 1 1 200 20\n", 4)+"sync 2000\n")
	off := h.submit(jobs.Spec{Name: "unhooked", Kind: jobs.Offline, Command: []string{"sleep", "60"}})
	off = h.state(off.ID, jobs.Running)
	on := h.submit(jobs.Spec{Name: "svc", Kind: jobs.Online, SLO: "p99=2x", Command: []string{"env", "MMK_FAKE_GPU=" + gpu, replay, svc, "0", "60"}})
	on = h.state(on.ID, jobs.Running)
	var view SLOView
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		view = h.n.SLO()
		if len(view.Instances) == 1 && len(view.Instances[0].Unrestrainable) == 1 && len(view.Jobs) == 1 && view.Jobs[0].Requests > 200 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("in 30 s: %+v", view)
		}
	}
	if got := view.Instances[0].Unrestrainable[0]; got != off.ID {
		t.Errorf("unrestrainable %s, want the unhooked job %s", got, off.ID)
	}
	if js := view.Jobs[0]; js.AloneN != 0 {
		t.Errorf("%d of the online job's requests taken as alone beside a running offline job", js.AloneN)
	}
}

// TestLiarNeverMovesTheRung (issue 54, item 1, end to end): an online
// job that launches nothing and reports a late request every 5 ms (the
// hook's mmk_report_request) beside a trainer never makes its instance's
// controller climb: its reports are not corroborated by any GPU work of
// it, and the trainer is never stopped. Before, the rung went from
// priority to suspend in 4 s and stayed.
func TestLiarNeverMovesTheRung(t *testing.T) {
	sn := newSLONode(t, nil)
	h, gpu, replay := sn.h, sn.gpu, sn.replay
	lies := sn.write(t, "lies.txt", "sync 5000\n")
	train := sn.write(t, "train.txt", "t 4 1 1 128 1 1 2000 0\nsync 0\n")
	off := h.submit(jobs.Spec{Name: "train", Kind: jobs.Offline, Command: []string{"env", "MMK_FAKE_GPU=" + gpu, replay, train, "0", "60"}})
	off = h.state(off.ID, jobs.Running)
	liar := h.submit(jobs.Spec{Name: "liar", Kind: jobs.Online, SLO: "p99=1ms", Command: []string{"env", "MMK_FAKE_LIE=50000", replay, lies, "0", "60"}})
	h.state(liar.ID, jobs.Running)
	var uncorroborated uint64
	for end := time.Now().Add(30 * time.Second); uncorroborated < 500; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d reports uncorroborated in 30 s", uncorroborated)
		}
		uncorroborated = 0
		for _, sv := range h.n.Schedulers() {
			uncorroborated += sv.Counters.Uncorroborated
		}
	}
	v := h.n.SLO()
	if len(v.Instances) != 1 || v.Instances[0].Level != 0 || len(v.Instances[0].Suspended) != 0 {
		t.Errorf("after %d lies: %+v", uncorroborated, v.Instances)
	}
	evs, err := h.n.Events(off.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Reason, "suspended") {
			t.Errorf("the trainer: %s", e.Reason)
		}
	}
}

// TestSLOSeenAcrossRestarts (issue 53, item 6): an online job's counts
// since submission outlive mmkd: a job whose record holds 1,000 requests
// (100 late) from before a restart shows them added to what its
// scheduler counts now, and the node saves the sum back to the store.
// Before, attainment restarted from zero with mmkd.
func TestSLOSeenAcrossRestarts(t *testing.T) {
	_, _, replay := buildHookFakes(t)
	dir := t.TempDir()
	svc := filepath.Join(dir, "svc.txt")
	if err := os.WriteFile(svc, []byte(strings.Repeat("s 4 1 1 128 1 1 200 20\n", 4)+"sync 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	j := jobs.Job{ID: jobs.NewID(now), Spec: jobs.Spec{Name: "svc", Kind: jobs.Online, SLO: "p99=100us",
		Command: []string{"env", "MMK_FAKE_GPU=" + filepath.Join(dir, "gpu"), replay, svc, "0", "60"}},
		Priority: 0, MemoryMiB: 1024, TaskKey: "svc", State: jobs.Pending, CreatedAt: now, UpdatedAt: now,
		SLOSeen: &jobs.SLOSeen{Requests: 1000, Late: 100}}
	sn := newSLONode(t, func(c *Config) {
		if _, _, err := c.Store.Create(j); err != nil {
			t.Fatal(err)
		}
	})
	h := sn.h
	var js JobSLO
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if v := h.n.SLO(); len(v.Jobs) == 1 && v.Jobs[0].Requests > 1100 {
			js = v.Jobs[0]
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no 100 requests measured in 30 s: %+v", h.n.SLO().Jobs)
		}
	}
	// Every request now is late (a bound of 100 µs): the late ones grow
	// as the requests do, from 100.
	if js.Late < 100+(js.Requests-1000)/2 || js.Attainment != 1-float64(js.Late)/float64(js.Requests) || js.Attainment >= 0.9 {
		t.Errorf("since submission: %d requests, %d late, attainment %.3f", js.Requests, js.Late, js.Attainment)
	}
	if err := h.n.saveSLOSeen(); err != nil {
		t.Fatal(err)
	}
	got, err := h.n.cfg.Store.Get(j.ID)
	if err != nil || got.SLOSeen == nil || got.SLOSeen.Requests < js.Requests || got.SLOSeen.Late < js.Late {
		t.Errorf("saved %+v (%v), want at least %d requests, %d late", got.SLOSeen, err, js.Requests, js.Late)
	}
}

// TestSLOInstanceNames (issue 37, item 5): the latency view names each
// instance as everywhere ("gpu0/gi2", the placement's instanceName), not
// by the key of its kernel scheduler. A job on a MIG instance starts the
// instance's scheduler and its controller (the job runs no CUDA, so the
// hook it is given is never loaded).
func TestSLOInstanceNames(t *testing.T) {
	dir := t.TempDir()
	sc := &SchedConfig{Policy: "fifo", Hook: filepath.Join(dir, "libmmkhook.so"), SocketDir: filepath.Join(dir, "run")}
	h := newHarnessWith(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}}, false, curveEstimator{}, sc,
		func(c *Config) { c.SLO = &SLOConfig{} })
	script, gate := gated(t, "0")
	j := h.state(h.submit(sh("svc", script, "")).ID, jobs.Running)
	name := j.Placement.InstanceName
	if !strings.HasPrefix(name, "gpu0/gi") {
		t.Fatalf("the job runs in %q", name)
	}
	v := h.n.SLO()
	if len(v.Instances) != 1 || v.Instances[0].Instance != name {
		t.Errorf("the latency controllers are on %+v, want one on %s", v.Instances, name)
	}
	open(t, gate)
	h.state(j.ID, jobs.Succeeded)
}
