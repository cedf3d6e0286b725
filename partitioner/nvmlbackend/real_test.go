package nvmlbackend

import (
	"os"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestRealGPUReadOnly runs against the real NVML when MMK_TEST_NVML=1 (on a
// GPU machine: bench/gpu/readonly.sh). It only reads: GPUs, their
// geometry, their instances. It never creates or destroys anything.
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
