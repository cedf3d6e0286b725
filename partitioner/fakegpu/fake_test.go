package fakegpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

func newFake(t *testing.T, specs ...GPUSpec) (*Fake, nvml.Device) {
	t.Helper()
	f, err := New(7, specs)
	if err != nil {
		t.Fatal(err)
	}
	if ret := f.Init(); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	t.Cleanup(func() { f.Shutdown() })
	d, ret := f.DeviceGetHandleByIndex(0)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	return f, d
}

func profileInfo(t *testing.T, d nvml.Device, name string) nvml.GpuInstanceProfileInfo {
	t.Helper()
	m, _ := partitioner.LookupModel("A100-80GB")
	p, err := m.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	info, ret := d.GetGpuInstanceProfileInfo(p.NVMLIndex)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	return info
}

// TestCreateGPUInstanceRules checks each hardware rule with the NVML code a
// real driver answers.
func TestCreateGPUInstanceRules(t *testing.T) {
	tests := []struct {
		name    string
		mig     bool
		layout  string
		profile string
		start   int
		size    int // 0: the profile's own
		want    nvml.Return
	}{
		{"free placement", true, "3g.40gb@0", "3g.40gb", 4, 0, nvml.SUCCESS},
		{"MIG disabled", false, "", "3g.40gb", 0, 0, nvml.ERROR_NOT_SUPPORTED},
		{"placement not allowed", true, "", "2g.20gb", 1, 0, nvml.ERROR_INVALID_ARGUMENT},
		{"1g at the last memory slice", true, "", "1g.10gb", 7, 0, nvml.ERROR_INVALID_ARGUMENT},
		{"wrong placement size", true, "", "3g.40gb", 0, 3, nvml.ERROR_INVALID_ARGUMENT},
		{"overlapping placement", true, "3g.40gb@0", "2g.20gb", 2, 0, nvml.ERROR_INSUFFICIENT_RESOURCES},
		{"partly overlapping", true, "1g.10gb@5", "3g.40gb", 4, 0, nvml.ERROR_INSUFFICIENT_RESOURCES},
		{"too many of a profile", true, "1g.10gb+me@0", "1g.10gb+me", 3, 0, nvml.ERROR_INSUFFICIENT_RESOURCES},
		{"whole GPU taken", true, "7g.80gb@0", "1g.10gb", 6, 0, nvml.ERROR_INSUFFICIENT_RESOURCES},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := newFake(t, GPUSpec{Model: "A100-80GB", MIG: tt.mig, Layout: tt.layout})
			info := profileInfo(t, d, tt.profile)
			size := tt.size
			if size == 0 {
				pls, _ := d.GetGpuInstancePossiblePlacements(&info)
				size = int(pls[0].Size)
			}
			_, ret := d.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(tt.start), Size: uint32(size)})
			if ret != tt.want {
				t.Errorf("create %s@%d on %q: %v, want %v", tt.profile, tt.start, tt.layout, ret, tt.want)
			}
		})
	}
}

func TestDestroyOrderAndBusy(t *testing.T) {
	f, d := newFake(t, GPUSpec{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"})
	gi, ret := d.GetGpuInstanceById(2)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if info, _ := gi.GetInfo(); info.Placement.Start != 4 {
		t.Fatalf("GPU instance 2 is at %d, want the second one created, at 4", info.Placement.Start)
	}
	if ret := gi.Destroy(); ret != nvml.ERROR_IN_USE {
		t.Errorf("destroying a GPU instance with a compute instance: %v, want ERROR_IN_USE", ret)
	}
	ci, ret := gi.GetComputeInstanceById(0)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	mig, _ := d.GetMigDeviceHandleByIndex(1)
	uuid, _ := mig.GetUUID()
	if err := f.AttachProcess(0, uuid, 4242, 1024); err != nil {
		t.Fatal(err)
	}
	procs, _ := mig.GetComputeRunningProcesses()
	if len(procs) != 1 || procs[0].Pid != 4242 || procs[0].GpuInstanceId != 2 {
		t.Errorf("processes on %s: %+v", uuid, procs)
	}
	if ret := ci.Destroy(); ret != nvml.ERROR_IN_USE {
		t.Errorf("destroying a busy compute instance: %v, want ERROR_IN_USE", ret)
	}
	f.DetachProcess(4242)
	if ret := ci.Destroy(); ret != nvml.SUCCESS {
		t.Errorf("destroying an idle compute instance: %v", ret)
	}
	if ret := gi.Destroy(); ret != nvml.SUCCESS {
		t.Errorf("destroying an empty GPU instance: %v", ret)
	}
	if _, ret := gi.GetInfo(); ret != nvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("a destroyed instance's handle answered %v, want ERROR_INVALID_ARGUMENT", ret)
	}
	if _, ret := d.GetGpuInstanceById(2); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("destroyed instance still found: %v", ret)
	}
}

func TestComputeInstanceRules(t *testing.T) {
	_, d := newFake(t, GPUSpec{Model: "A100-40GB", MIG: true, Layout: "4g.20gb@0"})
	gi, _ := d.GetGpuInstanceById(1)
	ci, _ := gi.GetComputeInstanceById(0)
	if ret := ci.Destroy(); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 0); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("a 3-slice compute instance in a 4g instance: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	two, ret := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE, 0)
	if ret != nvml.SUCCESS || two.SliceCount != 2 || two.InstanceCount != 2 || two.MultiprocessorCount != 28 {
		t.Fatalf("2-slice profile: %+v %v", two, ret)
	}
	for i, want := range []nvml.Return{nvml.SUCCESS, nvml.SUCCESS, nvml.ERROR_INSUFFICIENT_RESOURCES} {
		if _, ret := gi.CreateComputeInstance(&two); ret != want {
			t.Errorf("2-slice compute instance %d: %v, want %v", i+1, ret, want)
		}
	}
	if n, _ := d.GetMaxMigDeviceCount(); n != 7 {
		t.Errorf("max MIG devices %d", n)
	}
	if _, ret := d.GetMigDeviceHandleByIndex(2); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("third MIG device: %v, want ERROR_NOT_FOUND", ret)
	}
}

func TestUninitialisedCallsFail(t *testing.T) {
	f, err := New(1, []GPUSpec{{Model: "H200-141GB"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ret := f.DeviceGetCount(); ret != nvml.ERROR_UNINITIALIZED {
		t.Errorf("count before Init: %v", ret)
	}
	if ret := f.Shutdown(); ret != nvml.ERROR_UNINITIALIZED {
		t.Errorf("Shutdown before Init: %v", ret)
	}
	f.Init()
	d, _ := f.DeviceGetHandleByIndex(0)
	f.Shutdown()
	if _, ret := d.GetUUID(); ret != nvml.ERROR_UNINITIALIZED {
		t.Errorf("device call after Shutdown: %v", ret)
	}
}

func TestMIGModeAndProcesses(t *testing.T) {
	f, d := newFake(t, GPUSpec{Model: "H100-80GB"})
	if err := f.AttachProcess(0, "MIG-nope", 1, 10); err == nil {
		t.Error("attached to a MIG device of a GPU with MIG disabled")
	}
	if err := f.AttachProcess(0, "", 1, 512); err != nil {
		t.Fatal(err)
	}
	if mem, _ := d.GetMemoryInfo(); mem.Used != 512<<20 || mem.Total != 81559<<20 {
		t.Errorf("memory %+v", mem)
	}
	if err := f.SetMIGMode(0, true); err != nil {
		t.Fatal(err)
	}
	if cur, pending, _ := d.GetMigMode(); cur != nvml.DEVICE_MIG_DISABLE || pending != nvml.DEVICE_MIG_ENABLE {
		t.Errorf("after SetMIGMode: current %d pending %d", cur, pending)
	}
	if err := f.ResetGPU(0); err == nil || !strings.Contains(err.Error(), "processes are running") {
		t.Errorf("reset with a process: %v", err)
	}
	f.DetachProcess(1)
	if err := f.ResetGPU(0); err != nil {
		t.Fatal(err)
	}
	if cur, _, _ := d.GetMigMode(); cur != nvml.DEVICE_MIG_ENABLE {
		t.Error("MIG not enabled after reset")
	}
	if err := f.AttachProcess(0, "", 2, 1); err == nil {
		t.Error("attached to a whole GPU with MIG enabled")
	}
}

func TestNewRejectsBadSpecs(t *testing.T) {
	tests := []struct {
		spec GPUSpec
		want string
	}{
		{GPUSpec{Model: "V100"}, `unknown GPU model "V100"`},
		{GPUSpec{Model: "H100-80GB", Layout: "7g.80gb@0"}, "needs MIG mode enabled"},
		{GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@1"}, "cannot start at memory slice 1"},
	}
	for _, tt := range tests {
		if _, err := New(1, []GPUSpec{tt.spec}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) error = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

func TestUUIDsAreStableAndUnique(t *testing.T) {
	specs := []GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "1g.10gb@0+1g.10gb@1"}, {Model: "H100-80GB"}}
	a, _ := New(3, specs)
	b, _ := New(3, specs)
	c, _ := New(4, specs)
	seen := map[string]bool{}
	for _, f := range []*Fake{a, c} {
		for _, g := range f.gpus {
			seen[g.uuid] = true
			for _, gi := range g.instances {
				seen[gi.computes[0].uuid] = true
			}
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d distinct UUIDs over two seeds, want 8", len(seen))
	}
	if a.gpus[0].uuid != b.gpus[0].uuid || a.gpus[0].instances[1].computes[0].uuid != b.gpus[0].instances[1].computes[0].uuid {
		t.Error("the same seed gave other UUIDs")
	}
}

// TestUnimplementedMethodsNameThemselves checks that NVML calls the fake
// does not model fail loudly rather than answer with zero values.
func TestUnimplementedMethodsNameThemselves(t *testing.T) {
	_, d := newFake(t, GPUSpec{Model: "H100-80GB"})
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "GetFanSpeed") {
			t.Errorf("recovered %v, want a panic naming GetFanSpeed", r)
		}
	}()
	d.GetFanSpeed()
}

// TestProcessUtilization: a sample of each busy process newer than the
// caller's last, at every read while it stays busy; ERROR_NOT_FOUND
// without any, ERROR_NOT_SUPPORTED with MIG; bad values and unknown
// processes are refused.
func TestProcessUtilization(t *testing.T) {
	f, d := newFake(t, GPUSpec{Model: "H200-141GB"}, GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb"})
	if _, ret := d.GetProcessUtilization(0); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("no process: %v, want ERROR_NOT_FOUND", ret)
	}
	if err := f.AttachProcess(0, "", 7, 100); err != nil {
		t.Fatal(err)
	}
	if err := f.SetProcessUtilization(7, 101, 0); err == nil {
		t.Error("101 % was taken")
	}
	if err := f.SetProcessUtilization(8, 1, 0); err == nil {
		t.Error("an unknown process was taken")
	}
	if err := f.SetProcessUtilization(7, 40, 10); err != nil {
		t.Fatal(err)
	}
	s, ret := d.GetProcessUtilization(0)
	if ret != nvml.SUCCESS || len(s) != 1 || s[0].Pid != 7 || s[0].SmUtil != 40 || s[0].MemUtil != 10 {
		t.Fatalf("samples %+v %v", s, ret)
	}
	again, ret := d.GetProcessUtilization(s[0].TimeStamp)
	if ret != nvml.SUCCESS || len(again) != 1 || again[0].TimeStamp <= s[0].TimeStamp || again[0].SmUtil != 40 {
		t.Errorf("still busy: %+v %v, want a newer sample", again, ret)
	}
	if _, ret := d.GetProcessUtilization(again[0].TimeStamp + 1e9); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("nothing newer than a later time: %v, want ERROR_NOT_FOUND", ret)
	}
	if err := f.SetProcessUtilization(7, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, ret := d.GetProcessUtilization(0); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("idle: %v, want ERROR_NOT_FOUND", ret)
	}
	mig, _ := f.DeviceGetHandleByIndex(1)
	if _, ret := mig.GetProcessUtilization(0); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("MIG-enabled GPU: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if err := f.SetProcessMemory(7, -1); err == nil {
		t.Error("negative memory was taken")
	}
}
