package nvmlbackend

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

// Model reads the GPU's MIG geometry from the device: every GPU instance
// profile it offers, with name, id, slices, memory, SMs, count and
// placements. NVML answers these queries with MIG disabled too. The result
// is cached: a GPU's geometry does not change while the driver runs.
func (b *Backend) Model(gpu int) (*partitioner.Model, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.model(gpu)
}

func (b *Backend) model(gpu int) (*partitioner.Model, error) {
	if m, ok := b.models[gpu]; ok {
		return m, nil
	}
	g, err := b.gpu(gpu)
	if err != nil {
		return nil, err
	}
	if !g.MIG.Supported {
		return nil, fmt.Errorf("GPU %d (%s): %w: it does not support MIG", gpu, g.Name, partitioner.ErrNotSupported)
	}
	d, err := b.device(gpu)
	if err != nil {
		return nil, err
	}
	m := &partitioner.Model{Key: g.Model, MemoryMiB: g.MemoryMiB, SMs: g.SMs}
	if m.Key == "" {
		m.Key = g.Name
	}
	for idx := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := d.GetGpuInstanceProfileInfo(idx)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // the driver knows the index, this GPU has no such profile
		}
		if err := check(ret, "GPU %d: read GPU instance profile %d", gpu, idx); err != nil {
			return nil, err
		}
		p, err := readProfile(d, gpu, idx, info)
		if err != nil {
			return nil, err
		}
		m.Profiles = append(m.Profiles, p)
	}
	// nvidia-smi's order: by compute, then memory slices, "+me" after its twin.
	slices.SortStableFunc(m.Profiles, func(a, b partitioner.Profile) int {
		return cmp.Or(cmp.Compare(a.ComputeSlices, b.ComputeSlices), cmp.Compare(a.MemorySlices, b.MemorySlices), strings.Compare(a.Name, b.Name))
	})
	b.models[gpu] = m
	return m, nil
}

func readProfile(d nvml.Device, gpu, idx int, info nvml.GpuInstanceProfileInfo) (partitioner.Profile, error) {
	name, err := profileName(d, idx)
	if err != nil {
		return partitioner.Profile{}, fmt.Errorf("GPU %d: name GPU instance profile %d: %w", gpu, idx, err)
	}
	pls, ret := d.GetGpuInstancePossiblePlacements(&info)
	if err := check(ret, "GPU %d: read placements of %s", gpu, name); err != nil {
		return partitioner.Profile{}, err
	}
	p := partitioner.Profile{
		Name: name, ID: int(info.Id), NVMLIndex: idx,
		ComputeSlices: int(info.SliceCount), MemoryMiB: int64(info.MemorySizeMB),
		SMs: int(info.MultiprocessorCount), MaxCount: int(info.InstanceCount),
	}
	for _, pl := range pls {
		p.Placements = append(p.Placements, int(pl.Start))
		p.MemorySlices = int(pl.Size)
	}
	slices.Sort(p.Placements)
	return p, nil
}

// profileNamer is implemented by NVML devices that name a profile without
// the versioned C call. go-nvml's GetGpuInstanceProfileInfoV returns a
// handler that calls the C library directly, so an in-memory NVML (the
// fake) answers through this method instead.
type profileNamer interface {
	GpuInstanceProfileName(index int) (string, nvml.Return)
}

// profileName returns a profile's name without NVML's "MIG " prefix. The
// v2 structure carries the name; on driver 580 the v3 one left it empty
// (bench/nvmlprobe), so v3 is only the fallback.
func profileName(d nvml.Device, idx int) (string, error) {
	var name string
	if n, ok := d.(profileNamer); ok {
		s, ret := n.GpuInstanceProfileName(idx)
		if err := check(ret, "profile name"); err != nil {
			return "", err
		}
		name = s
	} else {
		v2, ret := d.GetGpuInstanceProfileInfoV(idx).V2()
		if err := check(ret, "profile info v2"); err != nil {
			return "", err
		}
		name = CString(v2.Name[:])
		if name == "" {
			if v3, ret := d.GetGpuInstanceProfileInfoV(idx).V3(); ret == nvml.SUCCESS {
				name = CString(v3.Name[:])
			}
		}
	}
	name = strings.TrimPrefix(name, "MIG ")
	if name == "" {
		return "", fmt.Errorf("NVML gave no name")
	}
	return name, nil
}

// CString converts a NUL-terminated C char array, as NVML structures hold
// names, to a Go string.
func CString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
