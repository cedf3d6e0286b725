package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestDeviceName: instance names become DNS labels, one per name (the
// mapping docs/kubernetes.md gives); so do the keys device names came
// from before issue 37.
func TestDeviceName(t *testing.T) {
	for name, want := range map[string]string{
		"gpu0":             "gpu0",
		"gpu0/gi1":         "gpu0-gi1",
		"gpu12/gi14":       "gpu12-gi14",
		"GPU1/gi0":         "gpu1-gi0",
		"gpu0-3g.40gb-at4": "gpu0-3g-40gb-at4",
	} {
		if got := DeviceName(name); got != want || len(validation.IsDNS1123Label(got)) > 0 {
			t.Errorf("DeviceName(%q) = %q, want %q (a DNS label)", name, got, want)
		}
	}
}

// TestResources: one shared device per instance, named after the
// instance (its name as a DNS label), with the GPU's model,
// the profile ("whole" without MIG), the instance's SMs, its memory as
// consumable capacity and the default a request consumes (never more
// than the instance has).
func TestResources(t *testing.T) {
	p := Plan{GPUs: []GPU{
		{Index: 0, Model: "H100-80GB", MIG: true, Instances: []Instance{
			{Name: "gpu0/gi1", Key: "gpu0-4g.40gb-at0", Profile: "4g.40gb", SMs: 64, MemoryMiB: 40192, Device: "MIG-a"},
			{Name: "gpu0/gi13", Key: "gpu0-1g.10gb-at6", Profile: "1g.10gb", SMs: 16, MemoryMiB: 2048, Device: "MIG-b"},
		}},
		{Index: 1, Model: "H200-141GB", Instances: []Instance{{Name: "gpu1", Key: "gpu1", Profile: "7g.141gb", SMs: 132, MemoryMiB: 143771, Device: "GPU-c"}}},
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
		{"gpu0-gi1", "4g.40gb", "MIG-a", 64, 0, true, 40192, 4096},
		{"gpu0-gi13", "1g.10gb", "MIG-b", 16, 0, true, 2048, 2048},
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
	// A device is found by its name, and by the name the driver gave it
	// before issue 37 (its key's): claims allocated then keep it.
	for device, want := range map[string]string{"gpu0-gi13": "gpu0/gi13", "gpu0-1g-10gb-at6": "gpu0/gi13", "gpu1": "gpu1"} {
		if in, ok := instanceOf(p, device); !ok || in.Name != want {
			t.Errorf("instanceOf(%s) = %+v %v, want %s", device, in, ok, want)
		}
	}
	for _, device := range []string{"gpu9", "gpu0-gi2", "gpu0-4g-40gb-at4"} {
		if in, ok := instanceOf(p, device); ok {
			t.Errorf("instanceOf(%s) found %s, which the plan lacks", device, in.Name)
		}
	}
}
