package nvmlbackend

import (
	"reflect"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestUsage: every device with its compute processes and their memory;
// without MIG, each process's utilisation since the last read (0 for a
// process NVML left out: idle); with MIG, each MIG device with its GPU
// instance and profile and no utilisation.
func TestUsage(t *testing.T) {
	b, f := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}, fakegpu.GPUSpec{Model: "H200-141GB"})
	insts, err := b.Instances(0)
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := b.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.AttachProcess(0, insts[1].UUID(), 10, 3000))
	must(f.AttachProcess(1, "", 20, 2048))
	must(f.AttachProcess(1, "", 21, 512))
	must(f.SetProcessUtilization(20, 70, 30))
	must(f.SetProcessUtilization(10, 50, 50)) // NVML gives none with MIG
	got, err := b.Usage()
	must(err)
	none := []partitioner.ProcessUsage{}
	want := []partitioner.DeviceUsage{
		{GPU: 0, GPUUUID: gpus[0].UUID, Device: insts[0].UUID(), GPUInstance: insts[0].ID, Profile: "4g.40gb", Processes: none},
		{GPU: 0, GPUUUID: gpus[0].UUID, Device: insts[1].UUID(), GPUInstance: insts[1].ID, Profile: "3g.40gb",
			Processes: []partitioner.ProcessUsage{{PID: 10, UsedMemoryMiB: 3000}}},
		{GPU: 1, GPUUUID: gpus[1].UUID, Device: gpus[1].UUID, GPUInstance: -1, Util: true,
			Processes: []partitioner.ProcessUsage{{PID: 20, UsedMemoryMiB: 2048, SMUtil: 70, MemUtil: 30}, {PID: 21, UsedMemoryMiB: 512}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage\n%+v\nwant\n%+v", got, want)
	}
	// Still busy: sampled again.
	got, err = b.Usage()
	must(err)
	if p := got[2].Processes[0]; p.SMUtil != 70 || !got[2].Util {
		t.Errorf("second read: %+v, want process 20 still at 70 %%", got[2])
	}
	must(f.SetProcessUtilization(20, 0, 0))
	must(f.SetProcessUtilization(21, 5, 1))
	must(f.SetProcessMemory(20, 4096))
	got, err = b.Usage()
	must(err)
	if p, q := got[2].Processes[0], got[2].Processes[1]; p.SMUtil != 0 || p.UsedMemoryMiB != 4096 || q.SMUtil != 5 || q.MemUtil != 1 {
		t.Errorf("third read: %+v, want process 20 idle at 4096 MiB and 21 busy", got[2].Processes)
	}
}
