package fakegpu

import (
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/mmkgpu/mmk/partitioner"
)

// ciSlices maps the NVML_COMPUTE_INSTANCE_PROFILE_* indexes mmk's models
// use to their compute slices.
var ciSlices = map[int]int{
	nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE: 1,
	nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE: 2,
	nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE: 3,
	nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE: 4,
	nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE: 7,
}

// ciProfiles lists, per GPU instance size in compute slices, the compute
// instance sizes the driver offers in it (nvidia-smi mig -lcip).
var ciProfiles = map[int][]int{1: {1}, 2: {1, 2}, 3: {1, 2, 3}, 4: {1, 2, 4}, 7: {1, 2, 3, 4, 7}}

// wholeProfile returns the compute instance profile index that spans a GPU
// instance of the given compute slices.
func wholeProfile(slices int) int {
	for idx, s := range ciSlices {
		if s == slices {
			return idx
		}
	}
	return -1
}

type gpuInstance struct {
	gpu       *gpu
	id        int
	profile   *partitioner.Profile
	start     int
	computes  []*computeInstance // sorted by id
	destroyed bool
	handle    *gpuInstanceHandle
}

type computeInstance struct {
	parent    *gpuInstance
	id        int
	profile   int // compute instance profile index
	slices    int
	uuid      string
	destroyed bool
	handle    *computeInstanceHandle
	mig       *migDevice
}

// createInstance enforces the hardware's rules for a new GPU instance:
// MIG enabled, a known profile at one of its placements with its size, no
// shared memory slice, the profile's count and the GPU's compute slices.
// The caller holds the lock.
func (g *gpu) createInstance(profileID uint32, start, size int) (*gpuInstance, nvml.Return) {
	if !g.migCurrent {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	p := g.profileByID(profileID)
	if p == nil || size != p.MemorySlices || !slices.Contains(p.Placements, start) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	var slots [partitioner.MemorySlices]bool
	compute, count := 0, 0
	for _, gi := range g.instances {
		for s := gi.start; s < gi.start+gi.profile.MemorySlices; s++ {
			slots[s] = true
		}
		compute += gi.profile.ComputeSlices
		if gi.profile == p {
			count++
		}
	}
	for s := start; s < start+size; s++ {
		if slots[s] {
			return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
		}
	}
	if count >= p.MaxCount || compute+p.ComputeSlices > partitioner.ComputeSlices {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	gi := &gpuInstance{gpu: g, id: lowestFree(len(g.instances), func(id int) bool {
		return slices.ContainsFunc(g.instances, func(x *gpuInstance) bool { return x.id == id })
	}, 1), profile: p, start: start}
	gi.handle = &gpuInstanceHandle{gi: gi}
	g.instances = append(g.instances, gi)
	slices.SortFunc(g.instances, func(a, b *gpuInstance) int { return a.id - b.id })
	return gi, nvml.SUCCESS
}

// createCompute enforces the rules for a new compute instance: a size the
// GPU instance offers, within its free compute slices and the profile's
// count. The caller holds the lock.
func (gi *gpuInstance) createCompute(profile int) (*computeInstance, nvml.Return) {
	size, ok := ciSlices[profile]
	if !ok || !slices.Contains(ciProfiles[gi.profile.ComputeSlices], size) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	used, count := 0, 0
	for _, ci := range gi.computes {
		used += ci.slices
		if ci.profile == profile {
			count++
		}
	}
	if used+size > gi.profile.ComputeSlices || count >= gi.profile.ComputeSlices/size {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	g := gi.gpu
	g.fake.serial++
	ci := &computeInstance{parent: gi, profile: profile, slices: size,
		uuid: "MIG-" + g.fake.uuid("mig", uint64(g.index), g.fake.serial)}
	ci.id = lowestFree(len(gi.computes), func(id int) bool {
		return slices.ContainsFunc(gi.computes, func(x *computeInstance) bool { return x.id == id })
	}, 0)
	ci.handle = &computeInstanceHandle{ci: ci}
	ci.mig = &migDevice{ci: ci}
	gi.computes = append(gi.computes, ci)
	slices.SortFunc(gi.computes, func(a, b *computeInstance) int { return a.id - b.id })
	return ci, nvml.SUCCESS
}

// lowestFree returns the smallest id from first on that taken rejects.
func lowestFree(n int, taken func(int) bool, first int) int {
	for id := first; id < first+n; id++ {
		if !taken(id) {
			return id
		}
	}
	return first + n
}

func (gi *gpuInstance) busy(ci *computeInstance) bool {
	return slices.ContainsFunc(gi.gpu.processes, func(p process) bool {
		return p.ci != nil && p.ci.parent == gi && (ci == nil || p.ci == ci)
	})
}

// gpuInstanceHandle is the NVML handle of a GPU instance.
type gpuInstanceHandle struct {
	mock.GpuInstance // unimplemented methods panic, naming themselves
	gi               *gpuInstance
}

var _ nvml.GpuInstance = (*gpuInstanceHandle)(nil)

// lock takes the fake's lock; see gpu.enter.
func (h *gpuInstanceHandle) lock() (func(), nvml.Return) {
	return h.gi.gpu.enter(func() bool { return h.gi.destroyed })
}

// GetInfo returns the instance's id, profile id and placement.
func (h *gpuInstanceHandle) GetInfo() (nvml.GpuInstanceInfo, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nvml.GpuInstanceInfo{}, ret
	}
	gi := h.gi
	return nvml.GpuInstanceInfo{
		Device: gi.gpu.handle, Id: uint32(gi.id), ProfileId: uint32(gi.profile.ID),
		Placement: nvml.GpuInstancePlacement{Start: uint32(gi.start), Size: uint32(gi.profile.MemorySlices)},
	}, nvml.SUCCESS
}

// GetComputeInstanceProfileInfo describes a compute instance profile of
// this GPU instance; only the shared engine profile exists.
func (h *gpuInstanceHandle) GetComputeInstanceProfileInfo(profile, engine int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nvml.ComputeInstanceProfileInfo{}, ret
	}
	if profile < 0 || profile >= nvml.COMPUTE_INSTANCE_PROFILE_COUNT || engine < 0 || engine >= nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	size, ok := ciSlices[profile]
	p := h.gi.profile
	if !ok || engine != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || !slices.Contains(ciProfiles[p.ComputeSlices], size) {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return nvml.ComputeInstanceProfileInfo{
		Id: uint32(profile), SliceCount: uint32(size), InstanceCount: uint32(p.ComputeSlices / size),
		MultiprocessorCount: uint32(p.SMs * size / p.ComputeSlices),
	}, nvml.SUCCESS
}

// CreateComputeInstance creates a compute instance of a profile.
func (h *gpuInstanceHandle) CreateComputeInstance(info *nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	ci, ret := h.gi.createCompute(int(info.Id))
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return ci.handle, nvml.SUCCESS
}

// GetComputeInstances lists the compute instances of a profile.
func (h *gpuInstanceHandle) GetComputeInstances(info *nvml.ComputeInstanceProfileInfo) ([]nvml.ComputeInstance, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	var out []nvml.ComputeInstance
	for _, ci := range h.gi.computes {
		if ci.profile == int(info.Id) {
			out = append(out, ci.handle)
		}
	}
	return out, nvml.SUCCESS
}

// GetComputeInstanceById returns the compute instance with an id.
func (h *gpuInstanceHandle) GetComputeInstanceById(id int) (nvml.ComputeInstance, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	for _, ci := range h.gi.computes {
		if ci.id == id {
			return ci.handle, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// Destroy destroys the GPU instance; it fails with ERROR_IN_USE while it
// has compute instances.
func (h *gpuInstanceHandle) Destroy() nvml.Return {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return ret
	}
	gi := h.gi
	if len(gi.computes) > 0 || gi.busy(nil) {
		return nvml.ERROR_IN_USE
	}
	gi.destroyed = true
	g := gi.gpu
	g.instances = slices.DeleteFunc(g.instances, func(x *gpuInstance) bool { return x == gi })
	return nvml.SUCCESS
}

// computeInstanceHandle is the NVML handle of a compute instance.
type computeInstanceHandle struct {
	mock.ComputeInstance // unimplemented methods panic, naming themselves
	ci                   *computeInstance
}

var _ nvml.ComputeInstance = (*computeInstanceHandle)(nil)

func (h *computeInstanceHandle) lock() (func(), nvml.Return) {
	return h.ci.parent.gpu.enter(func() bool { return h.ci.destroyed })
}

// GetInfo returns the compute instance's ids and profile.
func (h *computeInstanceHandle) GetInfo() (nvml.ComputeInstanceInfo, nvml.Return) {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nvml.ComputeInstanceInfo{}, ret
	}
	ci := h.ci
	return nvml.ComputeInstanceInfo{
		Device: ci.parent.gpu.handle, GpuInstance: ci.parent.handle,
		Id: uint32(ci.id), ProfileId: uint32(ci.profile),
	}, nvml.SUCCESS
}

// Destroy destroys the compute instance; it fails with ERROR_IN_USE while
// processes run on it.
func (h *computeInstanceHandle) Destroy() nvml.Return {
	unlock, ret := h.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return ret
	}
	ci := h.ci
	if ci.parent.busy(ci) {
		return nvml.ERROR_IN_USE
	}
	ci.destroyed = true
	gi := ci.parent
	gi.computes = slices.DeleteFunc(gi.computes, func(x *computeInstance) bool { return x == ci })
	return nvml.SUCCESS
}

// String names the compute instance for test failures.
func (ci *computeInstance) String() string {
	return fmt.Sprintf("%s@%d/ci%d", ci.parent.profile.Name, ci.parent.start, ci.id)
}
