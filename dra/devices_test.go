package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestDeviceName: instance keys become DNS labels, one per key.
func TestDeviceName(t *testing.T) {
	for key, want := range map[string]string{
		"gpu0":              "gpu0",
		"gpu0-3g.40gb-at4":  "gpu0-3g-40gb-at4",
		"gpu12-1g.18gb-at6": "gpu12-1g-18gb-at6",
		"GPU1-7g.80gb-at0":  "gpu1-7g-80gb-at0",
	} {
		if got := DeviceName(key); got != want || len(validation.IsDNS1123Label(got)) > 0 {
			t.Errorf("DeviceName(%q) = %q, want %q (a DNS label)", key, got, want)
		}
	}
}

// TestResources: one shared device per instance, with the GPU's model,
// the profile ("whole" without MIG), the instance's SMs, its memory as
// consumable capacity and the default a request consumes (never more
// than the instance has).
func TestResources(t *testing.T) {
	p := Plan{GPUs: []GPU{
		{Index: 0, Model: "H100-80GB", MIG: true, Instances: []Instance{
			{Key: "gpu0-4g.40gb-at0", Profile: "4g.40gb", SMs: 64, MemoryMiB: 40192, Device: "MIG-a"},
			{Key: "gpu0-1g.10gb-at6", Profile: "1g.10gb", SMs: 16, MemoryMiB: 2048, Device: "MIG-b"},
		}},
		{Index: 1, Model: "H200-141GB", Instances: []Instance{{Key: "gpu1", Profile: "7g.141gb", SMs: 132, MemoryMiB: 143771, Device: "GPU-c"}}},
	}}
	pool := Resources("n1", p, 4096).Pools["n1"]
	if len(pool.Slices) != 1 {
		t.Fatalf("%d slices", len(pool.Slices))
	}
	devs := pool.Slices[0].Devices
	for i, want := range []struct {
		name, profile, uuid string
		sms, gpu            int64
		mig                 bool
		memMiB, defMiB      int64
	}{
		{"gpu0-4g-40gb-at0", "4g.40gb", "MIG-a", 64, 0, true, 40192, 4096},
		{"gpu0-1g-10gb-at6", "1g.10gb", "MIG-b", 16, 0, true, 2048, 2048},
		{"gpu1", "whole", "GPU-c", 132, 1, false, 143771, 4096},
	} {
		d := devs[i]
		a := d.Attributes
		c := d.Capacity[CapMemory]
		if d.Name != want.name || *a[AttrProfile].StringValue != want.profile || *a[AttrUUID].StringValue != want.uuid ||
			*a[AttrSMs].IntValue != want.sms || *a[AttrGPU].IntValue != want.gpu || *a[AttrMIG].BoolValue != want.mig {
			t.Errorf("device %d: %s %v", i, d.Name, a)
		}
		if c.Value.Value() != want.memMiB<<20 || c.RequestPolicy.Default.Value() != want.defMiB<<20 || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
			t.Errorf("device %s: memory %s, default %s, shared %v", d.Name, c.Value.String(), c.RequestPolicy.Default.String(), d.AllowMultipleAllocations)
		}
		if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			t.Errorf("device %s: %d attributes and capacities", d.Name, n)
		}
	}
	if in, ok := instanceOf(p, "gpu0-1g-10gb-at6"); !ok || in.Key != "gpu0-1g.10gb-at6" {
		t.Errorf("instanceOf = %+v %v", in, ok)
	}
	if _, ok := instanceOf(p, "gpu9"); ok {
		t.Error("instanceOf found a device the plan lacks")
	}
}
