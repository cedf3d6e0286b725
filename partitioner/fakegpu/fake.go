package fakegpu

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/mmkgpu/mmk/partitioner"
)

// GPUSpec describes one fake GPU.
type GPUSpec struct {
	// Model is a built-in model key, e.g. "H100-80GB".
	Model string `mapstructure:"model" json:"model"`
	// MIG is the GPU's MIG mode at start.
	MIG bool `mapstructure:"mig" json:"mig"`
	// Layout is created at start, each GPU instance with one whole compute
	// instance; it needs MIG. Text as partitioner.ParseLayout reads it.
	Layout string `mapstructure:"layout" json:"layout"`
}

// product is what a real GPU of each built-in model reports about itself.
type product struct {
	name         string
	major, minor int // CUDA compute capability
	coresPerSM   int
	// idleW is the board's draw with nothing running, limitW its default
	// power limit (the SXM boards' TDP), in watts.
	idleW, limitW uint32
}

var products = map[string]product{
	"A100-40GB":  {"NVIDIA A100-SXM4-40GB", 8, 0, 64, 55, 400},
	"A100-80GB":  {"NVIDIA A100-SXM4-80GB", 8, 0, 64, 60, 400},
	"H100-80GB":  {"NVIDIA H100 80GB HBM3", 9, 0, 128, 70, 700},
	"H200-141GB": {"NVIDIA H200", 9, 0, 128, 75, 700},
}

// Fake is an in-memory NVML library holding a set of GPUs. It implements
// nvml.Interface; methods mmk does not use panic with the method's name.
type Fake struct {
	mock.Interface // unimplemented methods panic, naming themselves

	mu     sync.Mutex
	inits  int
	seed   uint64
	gpus   []*gpu
	serial uint64 // counts MIG devices ever made, for unique UUIDs
	clock  uint64 // the driver's clock (µs) of utilisation samples
	// now is the time the health readings are of (SetClock).
	now func() time.Time
	// sets are the event sets made by EventSetCreate and not freed.
	sets []*eventSet
}

var _ nvml.Interface = (*Fake)(nil)

type gpu struct {
	fake                *Fake
	index               int
	model               *partitioner.Model
	product             product
	uuid                string
	migCurrent, migNext bool
	instances           []*gpuInstance // sorted by id
	processes           []process
	handle              *device
	// ecc counts memory errors: corrected and uncorrected, since the
	// last reset (volatile) and over the GPU's life (aggregate).
	ecc struct{ corrected, uncorrected, aggCorrected, aggUncorrected uint64 }
}

type process struct {
	pid    uint32
	memMiB int64
	ci     *computeInstance // nil: on the whole GPU (MIG disabled)
	// smUtil and memUtil are how busy it is (SetProcessUtilization).
	smUtil, memUtil uint32
}

// New returns a fake holding the described GPUs, indexed in order, with
// UUIDs derived from seed so that runs are repeatable. It fails on an
// unknown model or a layout that the GPU would refuse.
func New(seed uint64, specs []GPUSpec) (*Fake, error) {
	f := &Fake{seed: seed, now: time.Now}
	for i, s := range specs {
		m, err := partitioner.LookupModel(s.Model)
		if err != nil {
			return nil, fmt.Errorf("fake GPU %d: %w", i, err)
		}
		g := &gpu{fake: f, index: i, model: m, product: products[m.Key], migCurrent: s.MIG, migNext: s.MIG}
		g.uuid = "GPU-" + f.uuid("gpu", uint64(i))
		g.handle = &device{gpu: g}
		f.gpus = append(f.gpus, g)
		if err := g.create(s.Layout); err != nil {
			return nil, fmt.Errorf("fake GPU %d: %w", i, err)
		}
	}
	return f, nil
}

// create makes the instances of a layout through the same paths NVML
// callers use.
func (g *gpu) create(text string) error {
	l, err := partitioner.ParseLayout(g.model, text)
	if err != nil {
		return err
	}
	if len(l.Instances) > 0 && !g.migCurrent {
		return fmt.Errorf("layout %q needs MIG mode enabled", text)
	}
	for _, in := range l.Instances {
		gi, ret := g.createInstance(uint32(in.Profile.ID), in.Start, in.Profile.MemorySlices)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("create %s: %v", in, ret)
		}
		if _, ret := gi.createCompute(wholeProfile(gi.profile.ComputeSlices)); ret != nvml.SUCCESS {
			return fmt.Errorf("create compute instance on %s: %v", in, ret)
		}
	}
	return nil
}

// gpuAt is the GPU of an index (f.mu held), or an error naming it.
func (f *Fake) gpuAt(gpuIndex int) (*gpu, error) {
	if gpuIndex < 0 || gpuIndex >= len(f.gpus) {
		return nil, fmt.Errorf("no GPU %d", gpuIndex)
	}
	return f.gpus[gpuIndex], nil
}

// uuid returns a UUID-formatted digest of the seed and the given parts.
func (f *Fake) uuid(kind string, parts ...uint64) string {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], f.seed)
	h.Write(b[:])
	h.Write([]byte(kind))
	for _, p := range parts {
		binary.LittleEndian.PutUint64(b[:], p)
		h.Write(b[:])
	}
	s := h.Sum(nil)
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// Init starts a session with the library, as nvmlInit does; sessions nest.
func (f *Fake) Init() nvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inits++
	return nvml.SUCCESS
}

// Shutdown ends a session started by Init.
func (f *Fake) Shutdown() nvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	f.inits--
	return nvml.SUCCESS
}

// DeviceGetCount returns the number of GPUs.
func (f *Fake) DeviceGetCount() (int, nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return 0, nvml.ERROR_UNINITIALIZED
	}
	return len(f.gpus), nvml.SUCCESS
}

// DeviceGetHandleByIndex returns the handle of GPU i.
func (f *Fake) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return nil, nvml.ERROR_UNINITIALIZED
	}
	if i < 0 || i >= len(f.gpus) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return f.gpus[i].handle, nvml.SUCCESS
}

// ErrorString names a return code, as nvmlErrorString does.
func (f *Fake) ErrorString(r nvml.Return) string { return r.Error() }

// AttachProcess records a compute process on a GPU, as a CUDA client that
// opened it would appear: on a MIG device (migUUID, when MIG is enabled) or
// on the whole GPU (migUUID "", when MIG is disabled). Attaching to a MIG
// device that does not exist fails, as CUDA would.
func (f *Fake) AttachProcess(gpuIndex int, migUUID string, pid uint32, memMiB int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpuAt(gpuIndex)
	if err != nil {
		return err
	}
	p := process{pid: pid, memMiB: memMiB}
	switch {
	case migUUID == "" && g.migCurrent:
		return fmt.Errorf("GPU %d has MIG enabled: a process must run on a MIG device", gpuIndex)
	case migUUID != "" && !g.migCurrent:
		return fmt.Errorf("GPU %d has MIG disabled: there is no MIG device %s", gpuIndex, migUUID)
	case migUUID != "":
		ci := g.computeByUUID(migUUID)
		if ci == nil {
			return fmt.Errorf("GPU %d has no MIG device %s", gpuIndex, migUUID)
		}
		p.ci = ci
	}
	g.processes = append(g.processes, p)
	return nil
}

// DetachProcess removes a process attached by AttachProcess, as if it exited.
func (f *Fake) DetachProcess(pid uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.gpus {
		g.processes = slices.DeleteFunc(g.processes, func(p process) bool { return p.pid == pid })
	}
}

// SetMIGMode requests a MIG mode for a GPU, as nvidia-smi -mig does. It
// takes effect at the next ResetGPU. Disabling MIG while GPU instances
// exist fails, as on hardware.
func (f *Fake) SetMIGMode(gpuIndex int, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpuAt(gpuIndex)
	if err != nil {
		return err
	}
	if !enabled && len(g.instances) > 0 {
		return fmt.Errorf("GPU %d: %v: destroy its %d GPU instances first", gpuIndex, nvml.ERROR_IN_USE, len(g.instances))
	}
	g.migNext = enabled
	return nil
}

// ResetGPU resets a GPU, applying a pending MIG mode. It fails while
// processes run on the GPU.
func (f *Fake) ResetGPU(gpuIndex int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpuAt(gpuIndex)
	if err != nil {
		return err
	}
	if len(g.processes) > 0 {
		return fmt.Errorf("GPU %d: %v: %d processes are running", gpuIndex, nvml.ERROR_IN_USE, len(g.processes))
	}
	g.migCurrent = g.migNext
	// The volatile ECC counters start again, as at a driver reload.
	g.ecc.corrected, g.ecc.uncorrected = 0, 0
	return nil
}

func (g *gpu) computeByUUID(uuid string) *computeInstance {
	for _, gi := range g.instances {
		for _, ci := range gi.computes {
			if ci.uuid == uuid {
				return ci
			}
		}
	}
	return nil
}

func (g *gpu) live() nvml.Return {
	if g.fake.inits == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	return nvml.SUCCESS
}

// enter takes the fake's lock for a call on a handle of g and returns the
// unlock function with the call's verdict: ERROR_UNINITIALIZED outside an
// Init session, ERROR_INVALID_ARGUMENT when stale (checked under the lock)
// reports that the handle's object was destroyed, as calls on a stale
// handle fail on hardware.
func (g *gpu) enter(stale func() bool) (func(), nvml.Return) {
	g.fake.mu.Lock()
	if ret := g.live(); ret != nvml.SUCCESS {
		return g.fake.mu.Unlock, ret
	}
	if stale != nil && stale() {
		return g.fake.mu.Unlock, nvml.ERROR_INVALID_ARGUMENT
	}
	return g.fake.mu.Unlock, nvml.SUCCESS
}

func (g *gpu) usedMiB(ci *computeInstance) int64 {
	var n int64
	for _, p := range g.processes {
		if ci == nil || p.ci == ci {
			n += p.memMiB
		}
	}
	return n
}

func (g *gpu) processInfos(filter func(process) bool) []nvml.ProcessInfo {
	var out []nvml.ProcessInfo
	for _, p := range g.processes {
		if !filter(p) {
			continue
		}
		info := nvml.ProcessInfo{Pid: p.pid, UsedGpuMemory: uint64(p.memMiB) << 20}
		if p.ci != nil {
			info.GpuInstanceId, info.ComputeInstanceId = uint32(p.ci.parent.id), uint32(p.ci.id)
		}
		out = append(out, info)
	}
	return out
}
