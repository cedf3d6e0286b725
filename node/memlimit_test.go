package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

// fakeBackend is a backend on a fake the test can attach processes to.
func fakeBackend(t *testing.T, gpus []fakegpu.GPUSpec) (*fakegpu.Fake, *nvmlbackend.Backend) {
	t.Helper()
	b, f, err := nvmlbackend.OpenFake(1, gpus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return f, b
}

// TestMemLimitEnv: under MPS a job's client gets the memory limit of its
// spec plus the margin, recorded in its placement; a job without memory
// of its own gets none unless every job is limited; without MPS, or with
// limits off, no job gets one.
func TestMemLimitEnv(t *testing.T) {
	tests := []struct {
		name   string
		mps    bool
		limit  MemLimitConfig
		memory int64
		want   int64
	}{
		{"spec's memory with a margin", true, MemLimitConfig{MarginPct: 10, MarginMiB: 64}, 2048, 2048 + 204 + 64},
		{"no memory in the spec", true, MemLimitConfig{MarginPct: 10}, 0, 0},
		{"every job", true, MemLimitConfig{Mode: MemLimitAll}, 0, 4096},
		{"limits off", true, MemLimitConfig{Mode: MemLimitOff}, 2048, 0},
		{"no MPS", false, MemLimitConfig{}, 2048, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
				if tc.mps {
					c.MPS = fakeMPS(t)
				}
				c.MemLimit, c.DefaultMemoryMiB = tc.limit, 4096
			})
			out := filepath.Join(t.TempDir(), "env")
			spec := sh("env", "env > "+out, "")
			spec.MemoryMiB = tc.memory
			j := h.state(h.submit(spec).ID, jobs.Succeeded)
			env, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(env), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=")
			if j.Placement.MemLimitMiB != tc.want || has != (tc.want > 0) {
				t.Fatalf("limit %d MiB, in the environment: %v; want %d", j.Placement.MemLimitMiB, has, tc.want)
			}
			if tc.want > 0 && !strings.Contains(string(env), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0="+itoa(tc.want)+"M\n") {
				t.Errorf("environment:\n%s", env)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// torchOOM is the line PyTorch's caching allocator prints when CUDA
// refuses an allocation.
const torchOOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 76.80 GiB is free."

// TestMemLimitFailure: a job that fails with CUDA's out-of-memory message
// under its limit is failed with the limit named (value and variable);
// its co-runner on the same GPU finishes; a job that fails for another
// reason, or without a limit, keeps its plain exit status.
func TestMemLimitFailure(t *testing.T) {
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
		c.MPS, c.PriorityShares, c.MemLimit = fakeMPS(t), true, MemLimitConfig{MarginPct: 10}
	})
	script, gate := gated(t, "0")
	co := h.submit(sh("co-runner", script, ""))
	h.state(co.ID, jobs.Running)
	hog := sh("hog", "echo step 1; echo '"+torchOOM+"' >&2; exit 3", "")
	hog.MemoryMiB = 2048
	other := sh("other", "echo 'RuntimeError: shapes do not match' >&2; exit 1", "")
	other.MemoryMiB = 2048
	unlimited := sh("unlimited", "echo '"+torchOOM+"' >&2; exit 3", "")
	hj := h.state(h.submit(hog).ID, jobs.Failed)
	oj := h.state(h.submit(other).ID, jobs.Failed)
	uj := h.state(h.submit(unlimited).ID, jobs.Failed)
	for _, want := range []string{"out of GPU memory under its limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2252M (2252 MiB: memory 2048 MiB + 204 MiB margin)",
		`its log: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB.`, "; exit status 3"} {
		if !strings.Contains(hj.Reason, want) {
			t.Errorf("hog's reason %q lacks %q", hj.Reason, want)
		}
	}
	if oj.Reason != "exit status 1" {
		t.Errorf("a job failing for another reason: %q, want the plain exit status", oj.Reason)
	}
	if uj.Reason != "exit status 3" {
		t.Errorf("a job without a limit: %q, want the plain exit status", uj.Reason)
	}
	open(t, gate)
	if j := h.state(co.ID, jobs.Succeeded); j.Restarts != 0 {
		t.Errorf("co-runner restarted %d times", j.Restarts)
	}
}

// TestMemLimitNVMLEvidence: a job that fails without a message but whose
// processes NVML saw at its limit is failed with the limit named; one
// that failed well under it keeps its plain exit status.
func TestMemLimitNVMLEvidence(t *testing.T) {
	f, b := fakeBackend(t, h200)
	h := newHarnessWith(t, h200, false, curveEstimator{}, nil, func(c *Config) {
		c.Backend, c.MPS, c.PriorityShares, c.UsageEvery = b, fakeMPS(t), true, 10*time.Millisecond
		c.MemLimit = MemLimitConfig{MarginPct: 10}
	})
	for _, tc := range []struct {
		used int64
		want string
	}{
		{2252, "exit status 1 at its GPU memory limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2252M (2252 MiB: memory 2048 MiB + 204 MiB margin): NVML saw 2252 MiB (no out-of-memory message in its log)"},
		{1500, "exit status 1"},
	} {
		script, gate := gated(t, "1")
		spec := sh("quiet", script, "")
		spec.MemoryMiB = 2048
		j := h.state(h.submit(spec).ID, jobs.Running)
		if err := f.AttachProcess(0, "", uint32(j.PID), tc.used); err != nil {
			t.Fatal(err)
		}
		h.until(j.ID, "sampled", func(jobs.Job) bool {
			peak, ok := h.n.usagePeak(j.ID, j.StartedAt)
			return ok && peak == tc.used
		})
		open(t, gate)
		j = h.state(j.ID, jobs.Failed)
		f.DetachProcess(uint32(j.PID))
		if j.Reason != tc.want {
			t.Errorf("%d MiB used: reason %q, want %q", tc.used, j.Reason, tc.want)
		}
	}
}

func TestOOMLine(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ log, want string }{
		{"", ""},
		{"epoch 1\nloss 0.3\n", ""},
		{"x\n" + torchOOM + "\nTraceback ends\n", torchOOM},
		{"CUDA out of memory. " + strings.Repeat("é", 100) + "\n", "CUDA out of memory. " + strings.Repeat("é", 68) + "..."},
		{"RuntimeError: CUDA error: out of memory\n", "RuntimeError: CUDA error: out of memory"},
		{"cudaErrorMemoryAllocation at train.cu:12\n", "cudaErrorMemoryAllocation at train.cu:12"},
		{"2026 W external/xla: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.00GiB\n", "2026 W external/xla: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.00GiB"},
		{"CUDA out of memory\x1b[0m\n" + strings.Repeat("padding line\n", 10000), ""},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, itoa(int64(i)))
		if err := os.WriteFile(p, []byte(tc.log), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := oomLine(p)
		if err != nil || got != tc.want {
			t.Errorf("log %d: %q %v, want %q", i, got, err, tc.want)
		}
	}
	if got, err := oomLine(filepath.Join(dir, "none")); got != "" || err != nil {
		t.Errorf("no log: %q %v", got, err)
	}
}
