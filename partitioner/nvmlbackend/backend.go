package nvmlbackend

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// Backend drives GPUs through an nvml.Interface. It serialises its own
// calls, so a multi-call operation sees a consistent GPU.
type Backend struct {
	lib  nvml.Interface
	name string

	mu     sync.Mutex
	models map[int]*partitioner.Model // geometry read from each GPU, by index
	// lastSample is the timestamp of the newest utilisation sample read
	// of each GPU, by index (ProcessUsage).
	lastSample map[int]uint64
	// xids are the XID errors seen (Health).
	xids xidWatch
}

var _ partitioner.Backend = (*Backend)(nil)

// New initialises lib and returns a backend over it, named name ("nvml" or
// "fake"). It fails with an error matching partitioner.ErrNoDriver when
// the library cannot be loaded.
func New(lib nvml.Interface, name string) (*Backend, error) {
	if err := check(lib.Init(), "initialise NVML"); err != nil {
		return nil, err
	}
	return &Backend{lib: lib, name: name, models: map[int]*partitioner.Model{}, lastSample: map[int]uint64{}}, nil
}

// Options selects and configures a backend for Open.
type Options struct {
	// Kind is "nvml", "fake", or "auto": NVML when a driver is installed,
	// the fake otherwise.
	Kind string
	// Library is the path of libnvidia-ml; "" searches the system's
	// library path for libnvidia-ml.so.1.
	Library string
	// FakeSeed and FakeGPUs describe the fake's GPUs.
	FakeSeed uint64
	FakeGPUs []fakegpu.GPUSpec
	// Logger receives the note that auto chose the fake. Nil discards it.
	Logger *slog.Logger
}

// Open returns the backend that opts select. With Kind "nvml" and no
// driver, the error says so and names the fake backend as the way to run
// without a GPU.
func Open(opts Options) (*Backend, error) {
	switch opts.Kind {
	case "fake":
		return openFake(opts)
	case "nvml", "auto":
	default:
		return nil, fmt.Errorf("unknown GPU backend %q (want auto, nvml or fake)", opts.Kind)
	}
	var nvmlOpts []nvml.LibraryOption
	if opts.Library != "" {
		nvmlOpts = append(nvmlOpts, nvml.WithLibraryPath(opts.Library))
	}
	b, err := New(nvml.New(nvmlOpts...), "nvml")
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, partitioner.ErrNoDriver) && opts.Kind == "auto":
		if opts.Logger != nil {
			opts.Logger.Warn("no NVIDIA driver found: using the fake GPU backend", "nvml", err.Error())
		}
		return openFake(opts)
	case errors.Is(err, partitioner.ErrNoDriver):
		return nil, fmt.Errorf("%w: libnvidia-ml.so.1 could not be loaded; run with --backend fake to use simulated GPUs", err)
	}
	return nil, err
}

func openFake(opts Options) (*Backend, error) {
	b, _, err := OpenFake(opts.FakeSeed, opts.FakeGPUs)
	return b, err
}

// OpenFake returns a backend named "fake" over a new fake NVML holding
// gpus (UUIDs derived from seed), and the fake itself, to which callers
// (tests, dry runs) attach processes as CUDA clients would.
func OpenFake(seed uint64, gpus []fakegpu.GPUSpec) (*Backend, *fakegpu.Fake, error) {
	f, err := fakegpu.New(seed, gpus)
	if err != nil {
		return nil, nil, err
	}
	b, err := New(f, "fake")
	if err != nil {
		return nil, nil, err
	}
	return b, f, nil
}

// Name returns "nvml" or "fake".
func (b *Backend) Name() string { return b.name }

// Close shuts NVML down.
func (b *Backend) Close() error {
	b.closeXIDs()
	return check(b.lib.Shutdown(), "shut down NVML")
}

// GPUs lists the node's GPUs.
func (b *Backend) GPUs() ([]partitioner.GPU, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ret := b.lib.DeviceGetCount()
	if err := check(ret, "count GPUs"); err != nil {
		return nil, err
	}
	out := make([]partitioner.GPU, 0, n)
	for i := range n {
		g, err := b.gpu(i)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func (b *Backend) device(i int) (nvml.Device, error) {
	d, ret := b.lib.DeviceGetHandleByIndex(i)
	return d, check(ret, "GPU %d: get handle", i)
}

func (b *Backend) gpu(i int) (partitioner.GPU, error) {
	d, err := b.device(i)
	if err != nil {
		return partitioner.GPU{}, err
	}
	g := partitioner.GPU{Index: i}
	var ret nvml.Return
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, check(ret, "GPU %d: read UUID", i)
	}
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return g, check(ret, "GPU %d: read name", i)
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return g, check(ret, "GPU %d: read memory", i)
	}
	g.MemoryMiB = int64(mem.Total >> 20)
	g.Model = partitioner.ModelKeyFor(g.Name, g.MemoryMiB)
	g.MIG, err = migMode(d, i)
	if err != nil {
		return g, err
	}
	g.SMs = smCount(d, g.Model)
	return g, nil
}

func migMode(d nvml.Device, i int) (partitioner.MIGMode, error) {
	cur, pending, ret := d.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		return partitioner.MIGMode{Supported: true, Current: cur == nvml.DEVICE_MIG_ENABLE, Pending: pending == nvml.DEVICE_MIG_ENABLE}, nil
	case nvml.ERROR_NOT_SUPPORTED:
		return partitioner.MIGMode{}, nil
	}
	return partitioner.MIGMode{}, check(ret, "GPU %d: read MIG mode", i)
}

// smCount returns the GPU's SMs. NVML has no SM count for a whole GPU
// (nvmlDeviceGetAttributes answers only for MIG devices: measured on an
// H200), so it divides the CUDA cores by the cores per SM of the compute
// capability; the built-in table answers when that fails.
func smCount(d nvml.Device, model string) int {
	cores, ret := d.GetNumGpuCores()
	major, minor, ret2 := d.GetCudaComputeCapability()
	if ret == nvml.SUCCESS && ret2 == nvml.SUCCESS {
		if per := coresPerSM(major, minor); per > 0 && cores > 0 {
			return cores / per
		}
	}
	if m, err := partitioner.LookupModel(model); err == nil {
		return m.SMs
	}
	return 0
}

// coresPerSM returns the FP32 cores per SM of a compute capability, from
// the CUDA programming guide's table of arithmetic throughputs.
func coresPerSM(major, minor int) int {
	switch {
	case major == 6 && minor == 0, major == 7, major == 8 && minor == 0:
		return 64
	case major == 6, major >= 8:
		return 128
	}
	return 0
}

// bytesToMiB converts an NVML byte count, which may be the "not
// available" marker, to MiB.
func bytesToMiB(b uint64) int64 {
	if b == math.MaxUint64 {
		return 0
	}
	return int64(b >> 20)
}
