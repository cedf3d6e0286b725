// Command nvmlprobe prints, read-only, what NVML reports about GPU 0: identity,
// memory, MIG mode, SM count sources, and every GPU instance profile with its
// name and placements. It never changes the GPU. It exists to check mmk's
// built-in MIG tables and the NVML backend's assumptions on a real machine.
package main

import (
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

func main() {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		fmt.Println("init:", ret)
		os.Exit(1)
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	fmt.Println("count", n, ret)
	d, ret := nvml.DeviceGetHandleByIndex(0)
	fmt.Println("handle", ret)
	name, ret := d.GetName()
	fmt.Printf("name %q %v\n", name, ret)
	uuid, ret := d.GetUUID()
	fmt.Println("uuid", uuid, ret)
	mem, ret := d.GetMemoryInfo()
	fmt.Printf("mem total=%d (%d MiB) used=%d %v\n", mem.Total, mem.Total>>20, mem.Used, ret)
	cur, pend, ret := d.GetMigMode()
	fmt.Println("mig", cur, pend, ret)
	attr, ret := d.GetAttributes()
	fmt.Printf("attributes %+v %v\n", attr, ret)
	cores, ret := d.GetNumGpuCores()
	fmt.Println("cores", cores, ret)
	arch, ret := d.GetArchitecture()
	fmt.Println("arch", arch, ret)
	maj, min, ret := d.GetCudaComputeCapability()
	fmt.Println("cc", maj, min, ret)
	mx, ret := d.GetMaxMigDeviceCount()
	fmt.Println("maxmig", mx, ret)
	procs, ret := d.GetComputeRunningProcesses()
	fmt.Println("procs", procs, ret)
	isMig, ret := d.IsMigDeviceHandle()
	fmt.Println("ismig", isMig, ret)
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		info, ret := d.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS {
			fmt.Println("profile", p, ret)
			continue
		}
		v2, r2 := d.GetGpuInstanceProfileInfoV(p).V2()
		v3, r3 := d.GetGpuInstanceProfileInfoV(p).V3()
		pl, rp := d.GetGpuInstancePossiblePlacements(&info)
		fmt.Printf("profile %d %+v\n  v2 %q %v v3 %q caps=%d %v\n  placements %v %v\n", p, info,
			nvmlbackend.CString(v2.Name[:]), r2, nvmlbackend.CString(v3.Name[:]), v3.Capabilities, r3, pl, rp)
	}
}
