package partitioner

import (
	"fmt"
	"slices"
	"strings"
)

// NVML_GPU_INSTANCE_PROFILE_* values, kept here so that the pure core does
// not import go-nvml. They select a profile in nvmlDeviceGetGpuInstanceProfileInfo.
const (
	nvmlProfile1Slice     = 0 // NVML_GPU_INSTANCE_PROFILE_1_SLICE
	nvmlProfile2Slice     = 1 // NVML_GPU_INSTANCE_PROFILE_2_SLICE
	nvmlProfile3Slice     = 2 // NVML_GPU_INSTANCE_PROFILE_3_SLICE
	nvmlProfile4Slice     = 3 // NVML_GPU_INSTANCE_PROFILE_4_SLICE
	nvmlProfile7Slice     = 4 // NVML_GPU_INSTANCE_PROFILE_7_SLICE
	nvmlProfile1SliceRev1 = 7 // NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 (+me)
	nvmlProfile1SliceRev2 = 9 // NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 (1 compute, 2 memory slices)
)

// shape is what the A100, H100 and H200 share for each of their seven
// profiles: NVML id and index, slices, count and placements. Only the
// names, memory and SM counts differ between those models.
type shape struct {
	id, index, compute, memory, max int
	placements                      []int
}

var gaShapes = [7]shape{
	{id: 19, index: nvmlProfile1Slice, compute: 1, memory: 1, max: 7, placements: []int{0, 1, 2, 3, 4, 5, 6}},
	{id: 20, index: nvmlProfile1SliceRev1, compute: 1, memory: 1, max: 1, placements: []int{0, 1, 2, 3, 4, 5, 6}},
	{id: 15, index: nvmlProfile1SliceRev2, compute: 1, memory: 2, max: 4, placements: []int{0, 2, 4, 6}},
	{id: 14, index: nvmlProfile2Slice, compute: 2, memory: 2, max: 3, placements: []int{0, 2, 4}},
	{id: 9, index: nvmlProfile3Slice, compute: 3, memory: 4, max: 2, placements: []int{0, 4}},
	{id: 5, index: nvmlProfile4Slice, compute: 4, memory: 4, max: 1, placements: []int{0}},
	{id: 0, index: nvmlProfile7Slice, compute: 7, memory: 8, max: 1, placements: []int{0}},
}

// sized is a profile's model-specific part: name, memory in MiB and SMs.
type sized struct {
	name string
	mib  int64
	sms  int
}

func newModel(key string, memoryMiB int64, sms int, rows [7]sized) *Model {
	m := &Model{Key: key, MemoryMiB: memoryMiB, SMs: sms}
	for i, s := range gaShapes {
		m.Profiles = append(m.Profiles, Profile{
			Name: rows[i].name, ID: s.id, NVMLIndex: s.index,
			ComputeSlices: s.compute, MemorySlices: s.memory,
			MemoryMiB: rows[i].mib, SMs: rows[i].sms, MaxCount: s.max,
			Placements: slices.Clone(s.placements),
		})
	}
	return m
}

// The built-in models, used to plan offline (mmkctl mig ...), by the fake
// GPU, and to name a real GPU's model. Memory sizes are
// nvmlGpuInstanceProfileInfo_t's memorySizeMB (nvidia-smi mig -lgip prints
// them in GiB); they shift by a few hundred MiB between driver releases,
// which is why the NVML backend plans with the geometry it reads from the
// device and only compares it with these tables.
//
//   - H200-141GB: read through NVML from an H200, driver 580.159.04
//     (bench/gpu/readonly.sh; docs/real-gpu.md).
//   - H100-80GB: nvidia-smi mig -lgip of an H100 SXM5 with a 570/580 driver;
//     the PCIe card has fewer SMs per profile.
//   - A100-40GB: NVIDIA's MIG user guide (A100-SXM4-40GB).
//   - A100-80GB: nvidia-smi mig -lgip of an A100-SXM4-80GB, driver 515.86.01.
var builtinModels = []*Model{
	newModel("A100-40GB", 40960, 108, [7]sized{
		{"1g.5gb", 4864, 14}, {"1g.5gb+me", 4864, 14}, {"1g.10gb", 9856, 14},
		{"2g.10gb", 9856, 28}, {"3g.20gb", 19968, 42}, {"4g.20gb", 19968, 56},
		{"7g.40gb", 40192, 98},
	}),
	newModel("A100-80GB", 81920, 108, [7]sized{
		{"1g.10gb", 9728, 14}, {"1g.10gb+me", 9728, 14}, {"1g.20gb", 19968, 14},
		{"2g.20gb", 19968, 28}, {"3g.40gb", 40192, 42}, {"4g.40gb", 40192, 56},
		{"7g.80gb", 80896, 98},
	}),
	newModel("H100-80GB", 81559, 132, [7]sized{
		{"1g.10gb", 9984, 16}, {"1g.10gb+me", 9984, 16}, {"1g.20gb", 20096, 26},
		{"2g.20gb", 20096, 32}, {"3g.40gb", 40448, 60}, {"4g.40gb", 40448, 64},
		{"7g.80gb", 81152, 132},
	}),
	newModel("H200-141GB", 143771, 132, [7]sized{
		{"1g.18gb", 16384, 16}, {"1g.18gb+me", 16384, 16}, {"1g.35gb", 33280, 26},
		{"2g.35gb", 33280, 32}, {"3g.71gb", 71424, 60}, {"4g.71gb", 71424, 64},
		{"7g.141gb", 143360, 132},
	}),
}

// ModelKeys lists the keys of the built-in models.
func ModelKeys() []string {
	keys := make([]string, len(builtinModels))
	for i, m := range builtinModels {
		keys[i] = m.Key
	}
	return keys
}

// LookupModel returns the built-in model with the given key (case does not
// matter), or an error that lists the known keys. The returned model is
// shared: callers must not modify it.
func LookupModel(key string) (*Model, error) {
	for _, m := range builtinModels {
		if strings.EqualFold(m.Key, key) {
			return m, nil
		}
	}
	return nil, fmt.Errorf("unknown GPU model %q (known: %s)", key, strings.Join(ModelKeys(), ", "))
}

// ModelKeyFor maps a product name and total memory, as NVML reports them,
// to a built-in model key, or "" when the GPU is none of them. The memory
// bounds keep apart products that share a chip name but not a geometry
// (H100 NVL 94GB, GH200).
func ModelKeyFor(productName string, memoryMiB int64) string {
	gib := memoryMiB / 1024
	tokens := strings.FieldsFunc(productName, func(r rune) bool { return r == ' ' || r == '-' })
	switch {
	case slices.Contains(tokens, "A100") && gib >= 38 && gib < 48:
		return "A100-40GB"
	case slices.Contains(tokens, "A100") && gib >= 76 && gib < 84:
		return "A100-80GB"
	case slices.Contains(tokens, "H100") && gib >= 76 && gib < 84:
		return "H100-80GB"
	case slices.Contains(tokens, "H200") && gib >= 135 && gib < 150:
		return "H200-141GB"
	}
	return ""
}

// MIGDisabled is the model of a GPU of m's kind with MIG mode off: its
// one instance, the whole-GPU profile, has all of the GPU's SMs and
// memory (with MIG on, the A100's whole-GPU instance has 98 of its 108
// SMs). Its layouts never change; it shares m's Key.
func (m *Model) MIGDisabled() *Model {
	out := &Model{Key: m.Key, MemoryMiB: m.MemoryMiB, SMs: m.SMs, Profiles: slices.Clone(m.Profiles)}
	for i := range out.Profiles {
		out.Profiles[i].Placements = slices.Clone(out.Profiles[i].Placements)
	}
	whole := &out.Profiles[len(out.Profiles)-1]
	whole.SMs, whole.MemoryMiB = m.SMs, m.MemoryMiB
	return out
}
