package server

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFakeCUPTIConcurrentActivity (issue 38): the fake CUPTI's activity
// records survive launches from several threads while another thread
// flushes, as under the hook's profiling (its finisher flushes while the
// job launches). hook/fake/cupti_stress.c checks that every launch's
// record comes back exactly once and whole, in buffers each handed back
// once; before the fake locked its activity state, every run lost,
// doubled or corrupted records, or crashed in malloc.
func TestFakeCUPTIConcurrentActivity(t *testing.T) {
	a := buildC(t)
	const runs = 5
	for i := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(ctx, a.cuptiStress, a.cupti, "8", "20000").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("run %d of %d: %v\n%s", i+1, runs, err, out)
		}
		if !strings.HasPrefix(string(out), "ok 160000 ") {
			t.Fatalf("run %d of %d: %q, want 160000 records", i+1, runs, out)
		}
		t.Logf("run %d: %s in %v", i+1, strings.TrimSpace(string(out)), time.Since(start))
	}
}
