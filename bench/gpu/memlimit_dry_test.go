package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/mps/mpstest"
)

// TestMemLimitDryRun: DRY=1 bench/gpu/memlimit-e2e.sh OUT runs mmkd on
// the fake backend with MPS through the stand-in control program and
// memhog.py on bench/gpu/drytorch (device memory limited by
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT as MPS limits it): the job with
// --memory 2GiB that asks for 4 GiB fails with the limit named, the one
// within its limit and the co-runner succeed, and a job failing for
// another reason keeps its exit status. Needs python3 and curl
// (MMK_E2E_DRY_TEST=required, as in CI, fails instead of skipping).
func TestMemLimitDryRun(t *testing.T) {
	ctl, err := mpstest.WriteControl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := dryRun(t, "about half a minute", "memlimit-e2e.sh", nil, "MMK_MPS_CONTROL="+ctl,
		"CO_ITERS=2500", "CO_WARM_S=1", "HOLD_S=6", "PHASE_MAX=120")
	type result struct {
		Case   string `json:"case"`
		State  string `json:"state"`
		Reason string `json:"reason"`
		Limit  int64  `json:"mem_limit_mib"`
		OK     bool   `json:"ok"`
	}
	got := map[string]result{}
	for _, r := range jsonLines[result](t, filepath.Join(out, "memlimit-e2e.jsonl")) {
		got[r.Case] = r
	}
	for _, c := range []string{"co-runner", "hog", "fits", "other", "overlap"} {
		if !got[c].OK {
			t.Errorf("%s: %+v", c, got[c])
		}
	}
	hog := got["hog"]
	for _, want := range []string{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2252M (2252 MiB: memory 2048 MiB + 204 MiB margin)", "CUDA out of memory", "exit status 3"} {
		if !strings.Contains(hog.Reason, want) {
			t.Errorf("the hog's reason %q lacks %q", hog.Reason, want)
		}
	}
	if strings.Contains(hog.Reason, "NVML saw") {
		t.Errorf("the hog's reason %q cites NVML, which listed none of its processes (fake GPUs)", hog.Reason)
	}
	if got["other"].Reason != "exit status 1" || got["fits"].Limit != 6758 || got["co-runner"].Limit != 0 {
		t.Errorf("other %+v, fits %+v, co-runner %+v", got["other"], got["fits"], got["co-runner"])
	}
	metrics, err := os.ReadFile(filepath.Join(out, "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), `mmk_job_fb_limit{`) || !strings.Contains(string(metrics), `job_name="memhog"} 2252`) {
		t.Errorf("metrics.txt has no limit of the hog:\n%s", metrics)
	}
	wide, err := os.ReadFile(filepath.Join(out, "jobs-wide.txt"))
	if err != nil || !strings.Contains(string(wide), "GPU MEM/LIMIT") {
		t.Errorf("jobs-wide.txt: %v\n%s", err, wide)
	}
}
