package nvmlbackend

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestDevices: gpu.devices restricts the fake backend to the GPUs it
// names, by index or UUID, keeping their NVML indices; the others are
// gone from the inventory and the usage and refuse every operation; an
// unknown or repeated device is an error that names it; none is all.
func TestDevices(t *testing.T) {
	b, err := Open(Options{Kind: "fake", FakeSeed: 1, FakeGPUs: []fakegpu.GPUSpec{
		{Model: "H100-80GB"}, {Model: "H100-80GB", MIG: true}, {Model: "H200-141GB"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	all, err := b.GPUs()
	if err != nil || len(all) != 3 {
		t.Fatalf("GPUs: %v, %v", all, err)
	}
	indices := func(b partitioner.Backend) []int {
		gs, err := b.GPUs()
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, g := range gs {
			out = append(out, g.Index)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		devices []string
		want    []int
		err     string
	}{
		{"none", nil, []int{0, 1, 2}, ""},
		{"by index", []string{"1"}, []int{1}, ""},
		{"by UUID", []string{strings.ToLower(all[2].UUID)}, []int{2}, ""},
		{"comma list", []string{"0, 2"}, []int{0, 2}, ""},
		{"unknown index", []string{"7"}, nil, `"7" is not a GPU of this node`},
		{"unknown UUID", []string{"GPU-nope"}, nil, `"GPU-nope" is not a GPU of this node`},
		{"twice", []string{"1", all[1].UUID}, nil, "GPU 1 is named twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := partitioner.Devices(b, tc.devices)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "gpu.devices") {
					t.Fatalf("error %v, want one with %q naming gpu.devices", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := indices(m); !slices.Equal(got, tc.want) {
				t.Errorf("GPUs %v, want %v", got, tc.want)
			}
			for i := range 3 {
				_, err := m.Model(i)
				managed := slices.Contains(tc.want, i)
				if managed != (err == nil) || (!managed && !errors.Is(err, partitioner.ErrNotFound)) {
					t.Errorf("Model(%d): %v, managed %v", i, err, managed)
				}
				if _, err := m.CreateGPUInstance(i, "1g.10gb", 0); !managed && !errors.Is(err, partitioner.ErrNotFound) {
					t.Errorf("CreateGPUInstance(%d) on an unmanaged GPU: %v", i, err)
				}
			}
			u, ok := m.(partitioner.UsageReader)
			if !ok {
				t.Fatal("the restricted backend lost Usage")
			}
			us, err := u.Usage()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range us {
				if !slices.Contains(tc.want, d.GPU) {
					t.Errorf("usage of unmanaged GPU %d", d.GPU)
				}
			}
			hr, ok := m.(partitioner.HealthReader)
			if !ok {
				t.Fatal("the restricted backend lost Health")
			}
			hs, err := hr.Health()
			if err != nil {
				t.Fatal(err)
			}
			var healthOf []int
			for _, h := range hs {
				healthOf = append(healthOf, h.GPU)
			}
			if !slices.Equal(healthOf, tc.want) {
				t.Errorf("health of GPUs %v, want %v", healthOf, tc.want)
			}
		})
	}
}
