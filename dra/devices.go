package dra

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// DriverName is the driver's name: the domain of its attributes, its
// DeviceClasses' selector and the vendor of its CDI devices.
const DriverName = "mmk.dev"

// The devices' attributes and capacity. Attribute names without a domain
// are the driver's: a CEL selector reads device.attributes["mmk.dev"].model.
const (
	// AttrModel is the GPU's model key (H100-80GB, H200-141GB, ...).
	AttrModel = "model"
	// AttrProfile is the MIG profile (3g.40gb), or "whole" without MIG.
	AttrProfile = "profile"
	// AttrGPU is the GPU's index on the node; AttrUUID the device's
	// CUDA_VISIBLE_DEVICES (GPU or MIG UUID).
	AttrGPU  = "gpu"
	AttrUUID = "uuid"
	// AttrSMs counts the instance's SMs.
	AttrSMs = "sms"
	// AttrMIG says whether the GPU runs MIG.
	AttrMIG = "mig"
	// AttrName is the instance's name as mmkctl, the API and the
	// dashboard show it (gpu0/gi2). The device's own name is its stable
	// key (profile and placement), which a MIG change never gives to
	// another instance, while NVML may reuse a GPU-instance id.
	AttrName = "name"
	// CapMemory is the instance's memory, consumed by each claim: the
	// cluster's scheduler puts claims on an instance while their memory
	// fits, as mmkd does with its own jobs.
	CapMemory resourceapi.QualifiedName = "memory"
)

// mib is a quantity of n MiB.
func mib(n int64) resource.Quantity { return *resource.NewQuantity(n<<20, resource.BinarySI) }

// DeviceName is the device an instance key is published as: a DNS label
// ("gpu0-3g.40gb-at4" becomes "gpu0-3g-40gb-at4").
func DeviceName(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// Resources is the node's pool (named after the node): one device per
// instance of the plan, shared by many claims (allowMultipleAllocations),
// each consuming memory: defaultMemoryMiB unless its request says how
// much (at least 1 MiB, in MiB steps, at most the instance's).
func Resources(nodeName string, p Plan, defaultMemoryMiB int64) resourceslice.DriverResources {
	devices := []resourceapi.Device{}
	for _, g := range p.GPUs {
		for _, in := range g.Instances {
			profile := in.Profile
			if !g.MIG {
				profile = "whole"
			}
			def := mib(max(1, min(defaultMemoryMiB, in.MemoryMiB)))
			devices = append(devices, resourceapi.Device{
				Name: DeviceName(in.Key),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					AttrModel:   {StringValue: ptr.To(g.Model)},
					AttrProfile: {StringValue: ptr.To(profile)},
					AttrGPU:     {IntValue: ptr.To(int64(g.Index))},
					AttrUUID:    {StringValue: ptr.To(in.Device)},
					AttrSMs:     {IntValue: ptr.To(int64(in.SMs))},
					AttrMIG:     {BoolValue: ptr.To(g.MIG)},
					AttrName:    {StringValue: ptr.To(in.Name)},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					CapMemory: {Value: mib(in.MemoryMiB), RequestPolicy: &resourceapi.CapacityRequestPolicy{
						Default:    &def,
						ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(mib(1)), Step: ptr.To(mib(1))},
					}},
				},
				AllowMultipleAllocations: ptr.To(true),
			})
		}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}

// instanceOf is the key of the plan's instance published as device.
func instanceOf(p Plan, device string) (Instance, bool) {
	for _, g := range p.GPUs {
		for _, in := range g.Instances {
			if DeviceName(in.Key) == device {
				return in, true
			}
		}
	}
	return Instance{}, false
}
