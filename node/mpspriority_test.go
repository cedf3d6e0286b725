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

// TestMPSClientPriority: under MPS every job gets its client priority,
// online 0 and offline 1 (below normal) unless its spec says otherwise,
// next to the daemon's pipe directory.
func TestMPSClientPriority(t *testing.T) {
	ctl, err := mpstest.WriteControl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := mps.NewManager(mps.Options{Root: filepath.Join(t.TempDir(), "mps"), Control: ctl})
	if err != nil {
		t.Fatal(err)
	}
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
