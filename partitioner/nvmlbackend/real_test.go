package nvmlbackend

import (
	"os"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestRealGPUReadOnly runs against the real NVML when MMK_TEST_NVML=1 (on a
// GPU machine: bench/gpu/readonly.sh). It only reads: GPUs, their
// geometry, their instances, their health (twice, the XID event set
// between). It never creates or destroys anything.
func TestRealGPUReadOnly(t *testing.T) {
	if os.Getenv("MMK_TEST_NVML") != "1" {
		t.Skip("set MMK_TEST_NVML=1 on a GPU machine")
	}
	b, err := Open(Options{Kind: "nvml"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gpus, err := b.GPUs()
	if err != nil || len(gpus) == 0 {
		t.Fatalf("GPUs: %v, %v", gpus, err)
	}
	for range 2 {
		hs, err := b.Health()
		if err != nil || len(hs) != len(gpus) {
			t.Fatalf("health: %d GPUs, %v; want %d", len(hs), err, len(gpus))
		}
		for _, h := range hs {
			t.Logf("GPU %d health: %s", h.GPU, show([]partitioner.GPUHealth{h}))
			if h.UUID != gpus[h.GPU].UUID {
				t.Errorf("GPU %d health of %s, want %s", h.GPU, h.UUID, gpus[h.GPU].UUID)
			}
			if h.PowerW != nil && (*h.PowerW <= 0 || h.PowerLimitW != nil && *h.PowerW > 1.2**h.PowerLimitW) {
				t.Errorf("GPU %d draws %v W of a %v W limit", h.GPU, *h.PowerW, h.PowerLimitW)
			}
			if h.TempC != nil && (*h.TempC <= 0 || *h.TempC > 120) {
				t.Errorf("GPU %d at %d °C", h.GPU, *h.TempC)
			}
			if h.UtilPct != nil && (*h.UtilPct < 0 || *h.UtilPct > 100) {
				t.Errorf("GPU %d utilisation %d %%", h.GPU, *h.UtilPct)
			}
		}
	}
	for _, g := range gpus {
		t.Logf("GPU %d: %s model=%q memory=%d MiB SMs=%d MIG=%s", g.Index, g.Name, g.Model, g.MemoryMiB, g.SMs, g.MIG)
		if g.SMs <= 0 || g.MemoryMiB <= 0 {
			t.Errorf("GPU %d: SMs %d, memory %d", g.Index, g.SMs, g.MemoryMiB)
		}
		if !g.MIG.Supported {
			continue
		}
		m, err := b.Model(g.Index)
		if err != nil {
			t.Fatal(err)
		}
		builtin, err := partitioner.LookupModel(g.Model)
		if err != nil {
			t.Errorf("GPU %d: no built-in table: %v", g.Index, err)
			continue
		}
		if d := builtin.Diff(m); d != nil {
			t.Errorf("GPU %d differs from the built-in %s table: %q", g.Index, g.Model, d)
		}
		if n := len(m.MaximalLayouts(nil)); n != 78 {
			t.Errorf("GPU %d: %d maximal layouts from the device's geometry, want 78", g.Index, n)
		}
		insts, err := b.Instances(g.Index)
		if err != nil {
			t.Fatal(err)
		}
		if !g.MIG.Current && len(insts) != 0 {
			t.Errorf("GPU %d: MIG disabled but %d instances", g.Index, len(insts))
		}
	}
}
