package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/mps/mpstest"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// fakeMPS is an MPS manager on the fake control daemon (mpstest).
func fakeMPS(t *testing.T) *mps.Manager {
	t.Helper()
	ctl, err := mpstest.WriteControl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := mps.NewManager(mps.Options{Root: filepath.Join(t.TempDir(), "mps"), Control: ctl})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMPSClientPriority: under MPS every job gets its client priority,
// online 0 and offline 1 (below normal) unless its spec says otherwise,
// next to the daemon's pipe directory.
func TestMPSClientPriority(t *testing.T) {
	m := fakeMPS(t)
	h := newHarnessWith(t, []fakegpu.GPUSpec{{Model: "H200-141GB"}}, false, curveEstimator{}, nil, func(c *Config) { c.MPS = m })
	one := 1
	zero := 0
	tests := []struct {
		name string
		kind jobs.Kind
		prio *int
		want string
	}{
		{"offline", jobs.Offline, nil, "CUDA_MPS_CLIENT_PRIORITY=1"},
		{"online", jobs.Online, nil, "CUDA_MPS_CLIENT_PRIORITY=0"},
		{"offline at normal", jobs.Offline, &zero, "CUDA_MPS_CLIENT_PRIORITY=0"},
		{"online below normal", jobs.Online, &one, "CUDA_MPS_CLIENT_PRIORITY=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "env")
			spec := sh(tc.name, "env > "+out, "")
			spec.Kind, spec.MPSPriority = tc.kind, tc.prio
			j := h.submit(spec)
			h.state(j.ID, jobs.Succeeded)
			env, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(env), tc.want+"\n") || !strings.Contains(string(env), "CUDA_MPS_PIPE_DIRECTORY=") {
				t.Errorf("job environment lacks %s or the MPS pipe directory:\n%s", tc.want, env)
			}
		})
	}
}

// TestPriorityShares: under MPS with priority shares, an online job and
// two offline ones share the GPU at once, each at 100 %, and neither an
// arrival nor a completion restarts anyone: the job that would be
// re-shared to 50 % and back without them (TestRestartOnReshare) keeps
// its one start.
func TestPriorityShares(t *testing.T) {
	m := fakeMPS(t)
	h := newHarnessWith(t, h200, false, curveEstimator{"half_train": 50}, nil, func(c *Config) { c.MPS, c.PriorityShares = m, true })
	out := filepath.Join(t.TempDir(), "starts")
	full := h.submit(sh("full", `echo "$MMK_RESTART_COUNT $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" >> `+out+`; trap 'exit 0' TERM; sleep 30 & wait`, "lin"))
	h.state(full.ID, jobs.Running)
	script, gate := gated(t, "0")
	half := h.submit(sh("half", script, "half"))
	online := sh("online", script, "")
	online.Kind = jobs.Online
	on := h.submit(online)
	want := map[string]int{full.ID: 100, half.ID: 100, on.ID: 100}
	for id, pct := range want {
		if j := h.state(id, jobs.Running); j.Placement.MPSPercent != pct {
			t.Errorf("job %s at %d %%, want %d", j.Spec.Name, j.Placement.MPSPercent, pct)
		}
	}
	open(t, gate)
	h.state(half.ID, jobs.Succeeded)
	h.state(on.ID, jobs.Succeeded)
	if _, err := h.n.Cancel(full.ID, "test over"); err != nil {
		t.Fatal(err)
	}
	// Its supervisor writes the exit record before the temporary
	// directories go.
	j := h.until(full.ID, "cancelled and ended", func(j jobs.Job) bool { return j.State == jobs.Cancelled && j.ExitCode != nil })
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); j.Restarts != 0 || len(got) != 2 || got[0] != "0" || got[1] != "100" {
		t.Errorf("full job: %d restarts, starts (restart count, share) %v; want one start at 100 %%", j.Restarts, got)
	}
	rs, err := h.n.Reconfigs(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Restarted) > 0 {
			t.Errorf("reconfiguration restarted %v (%s)", r.Restarted, r.Cause)
		}
	}
}
