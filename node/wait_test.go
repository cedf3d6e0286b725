package node

import (
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestWaitReasons: a job the placement loop leaves waiting says why, in
// words with numbers, since when and where it stands in the queue, in
// the job object and the plan (issue 37, item 3: waiting jobs never said
// why).
func TestWaitReasons(t *testing.T) {
	t.Run("memory and shares", func(t *testing.T) {
		h := newHarness(t, h200, false, curveEstimator{"half_train": 50})
		script, _ := gated(t, "0")
		big := sh("big", script, "half")
		big.MemoryMiB = 100 << 10
		a := h.submit(big)
		h.state(a.ID, jobs.Running)
		// 143771 MiB - 100 GiB - 4 GiB (the half job, at the default) =
		// 37275 MiB free: 60 GiB does not fit.
		wide := sh("wide", "exit 0", "")
		wide.MemoryMiB = 60 << 10
		b := h.submit(wide)
		half := sh("half", script, "half")
		c := h.submit(half)
		h.state(c.ID, jobs.Running)
		d := h.submit(sh("third", "exit 0", "half")) // the shares are taken: 50 + 50 %
		jb := h.until(b.ID, "a wait reason", func(j jobs.Job) bool { return j.Wait != nil })
		jd := h.until(d.ID, "a wait reason", func(j jobs.Job) bool { return j.Wait != nil })
		tests := []struct {
			j        jobs.Job
			class    string
			reason   string
			position int
		}{
			{jb, WaitMemory, "needs 60 GiB; the most free is 36.4 GiB on gpu0 (whole GPU)", 1},
			// No MPS on this node: no MPS words (issue 53).
			{jd, WaitShare, "no share left (the placement's; MPS is off): gpu0 (whole GPU) gives 100 % to 2 jobs", 2},
		}
		for _, tt := range tests {
			w := tt.j.Wait
			if w.Class != tt.class || !strings.Contains(w.Reason, tt.reason) || w.Position != tt.position || w.Since.IsZero() || w.Since.After(time.Now()) {
				t.Errorf("job %s waits %+v, want class %s, reason %q, position %d", tt.j.Spec.Name, *w, tt.class, tt.reason, tt.position)
			}
		}
		// The plan is published after the decision that noted the waits
		// the jobs show: under load a read between them sees the one before.
		v := h.n.Plan()
		for deadline := time.Now().Add(10 * time.Second); len(v.WaitingJobs) != 2 && time.Now().Before(deadline); v = h.n.Plan() {
			time.Sleep(5 * time.Millisecond)
		}
		if len(v.WaitingJobs) != 2 || v.WaitingJobs[0].Name != "wide" || v.WaitingJobs[0].Wait.Class != WaitMemory ||
			v.WaitingByClass[WaitMemory] != 1 || v.WaitingByClass[WaitShare] != 1 {
			t.Errorf("plan waiting %+v by class %v", v.WaitingJobs, v.WaitingByClass)
		}
		if j, _ := h.n.Job(a.ID); j.Wait != nil {
			t.Errorf("a running job waits: %+v", j.Wait)
		}
	})
	t.Run("no instance", func(t *testing.T) {
		h := newHarness(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true}}, false, curveEstimator{})
		j := h.submit(sh("job", "exit 0", ""))
		j = h.until(j.ID, "a wait reason", func(j jobs.Job) bool { return j.Wait != nil })
		if w := j.Wait; w.Class != WaitNoInstance || !strings.Contains(w.Reason, "gpu0 has no MIG instance and mig.manage is off") {
			t.Errorf("waits %+v", *w)
		}
	})
}
