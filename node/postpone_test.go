package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// TestPostponedStartRetried: a start postponed because the job's
// environment failed (here its kernel profile directory cannot be made:
// a file stands where the directory goes) is tried again on a timer, with
// no other event to wake the loop: once the trouble is gone the job runs.
func TestPostponedStartRetried(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "profiles")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &SchedConfig{Policy: "fikit", Hook: "/nonexistent/libmmkhook.so", SocketDir: filepath.Join(dir, "run"),
		ProfileDir: filepath.Join(blocker, "sub")}
	h := newHarnessWith(t, h200, false, curveEstimator{}, sc)
	j := h.submit(sh("postponed", "exit 0", ""))
	h.until(j.ID, "postponed once", func(j jobs.Job) bool {
		return j.State == jobs.Pending && j.Reason != ""
	})
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	// Nothing else happens on the node: only the retry timer can start it.
	deadline := time.Now().Add(3 * retryAfter)
	for {
		got, err := h.n.Job(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == jobs.Succeeded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s (%s) %v after its environment recovered: the postponed start was not retried", j.ID, got.State, got.Reason, 3*retryAfter)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
