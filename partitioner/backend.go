package partitioner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Backend is mmk's access to the GPUs of one node: inventory, MIG geometry
// and MIG instances, and the four operations that change a layout. GPUs are
// addressed by NVML index; GPU and compute instances by the ids the driver
// assigned them. Implementations are safe for concurrent use.
type Backend interface {
	// Name says which implementation this is: "nvml" or "fake".
	Name() string
	// GPUs lists the node's GPUs in index order.
	GPUs() ([]GPU, error)
	// Model returns the MIG geometry of a GPU as the device reports it.
	Model(gpu int) (*Model, error)
	// Instances lists a GPU's GPU instances, each with its compute
	// instances, MIG device UUIDs and processes; none when MIG is disabled.
	Instances(gpu int) ([]GPUInstance, error)
	// CreateGPUInstance creates a GPU instance of the named profile at a
	// placement and returns its id.
	CreateGPUInstance(gpu int, profile string, start int) (int, error)
	// CreateComputeInstance creates a compute instance that spans the
	// whole GPU instance and returns its id.
	CreateComputeInstance(gpu, gpuInstance int) (int, error)
	// DestroyComputeInstance destroys a compute instance; it fails with
	// ErrBusy while processes run on it.
	DestroyComputeInstance(gpu, gpuInstance, computeInstance int) error
	// DestroyGPUInstance destroys a GPU instance that has no compute
	// instance left; it fails with ErrBusy while processes run on it.
	DestroyGPUInstance(gpu, gpuInstance int) error
	// Close releases the backend.
	Close() error
}

// Errors that backends wrap, so that callers can tell causes apart with
// errors.Is whatever the backend.
var (
	// ErrNoDriver means the NVIDIA management library is not installed.
	ErrNoDriver = errors.New("no NVIDIA driver")
	// ErrMIGDisabled means the GPU's MIG mode is not enabled.
	ErrMIGDisabled = errors.New("MIG mode is disabled")
	// ErrBusy means processes run on the instance, or it still has
	// compute instances.
	ErrBusy = errors.New("in use")
	// ErrInsufficientResources means the GPU has no room for the instance.
	ErrInsufficientResources = errors.New("insufficient resources")
	// ErrInvalidArgument means a profile, placement or id is not valid.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound means the GPU or instance does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNotSupported means the GPU does not support the operation.
	ErrNotSupported = errors.New("not supported")
)

// GPU describes one physical GPU.
type GPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Name is the product name NVML reports, e.g. "NVIDIA H200".
	Name string `json:"name"`
	// Model is the built-in model key ("H100-80GB"), or "" when mmk has
	// no table for the GPU.
	Model     string  `json:"model"`
	MemoryMiB int64   `json:"memoryMiB"`
	SMs       int     `json:"sms"`
	MIG       MIGMode `json:"mig"`
}

// MIGMode is a GPU's MIG mode: the current one and the one pending until
// the next GPU reset.
type MIGMode struct {
	Supported bool `json:"supported"`
	Current   bool `json:"current"`
	Pending   bool `json:"pending"`
}

// String returns "enabled", "disabled", "unsupported", or the current mode
// with the pending one, e.g. "disabled (enabled after reset)".
func (m MIGMode) String() string {
	if !m.Supported {
		return "unsupported"
	}
	s := onOff(m.Current)
	if m.Pending != m.Current {
		s += " (" + onOff(m.Pending) + " after reset)"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// GPUInstance is a MIG GPU instance that exists on a GPU.
type GPUInstance struct {
	// ID is NVML's GPU-instance id, unique on its GPU while the instance
	// lives; Name is how mmk shows the instance everywhere
	// (InstanceName: "gpu0/gi1"), set by ReadInventory.
	ID               int               `json:"id"`
	Name             string            `json:"name,omitempty"`
	Profile          string            `json:"profile"`
	Start            int               `json:"start"`
	Size             int               `json:"size"`
	MemoryMiB        int64             `json:"memoryMiB"`
	SMs              int               `json:"sms"`
	ComputeSlices    int               `json:"computeSlices"`
	ComputeInstances []ComputeInstance `json:"computeInstances"`
}

// ComputeInstance is a compute instance inside a GPU instance; with its
// GPU instance it forms a MIG device, which CUDA addresses by UUID.
type ComputeInstance struct {
	ID            int       `json:"id"`
	ComputeSlices int       `json:"computeSlices"`
	UUID          string    `json:"uuid"`
	Processes     []Process `json:"processes"`
}

// Process is a compute process running on a GPU or MIG device.
type Process struct {
	PID           int   `json:"pid"`
	UsedMemoryMiB int64 `json:"usedMemoryMiB"`
}

// InstanceName is how mmk names a GPU's MIG instance wherever it shows
// one (mmkctl, the API, /metrics, the dashboard): "gpu0/gi1", the GPU's
// index and NVML's GPU-instance id (DCGM's GPU_I_ID). Its profile and
// placement ("4g.40gb@0") are attributes beside it, not its name.
func InstanceName(gpu, gi int) string { return "gpu" + strconv.Itoa(gpu) + "/gi" + strconv.Itoa(gi) }

// WholeGPUName names a GPU without MIG, one instance of it all: "gpu2".
func WholeGPUName(gpu int) string { return "gpu" + strconv.Itoa(gpu) }

// String returns the instance's placement text, e.g. "3g.40gb@4".
func (g GPUInstance) String() string { return fmt.Sprintf("%s@%d", g.Profile, g.Start) }

// Processes lists the processes on all of the instance's compute instances.
func (g GPUInstance) Processes() []Process {
	var ps []Process
	for _, ci := range g.ComputeInstances {
		ps = append(ps, ci.Processes...)
	}
	return ps
}

// UUID returns the MIG device UUID of the instance's first compute
// instance, or "" when it has none.
func (g GPUInstance) UUID() string {
	if len(g.ComputeInstances) == 0 {
		return ""
	}
	return g.ComputeInstances[0].UUID
}

// whole reports whether the instance has exactly one compute instance and
// it spans all of the instance's compute slices: the shape mmk creates.
func (g GPUInstance) whole() bool {
	return len(g.ComputeInstances) == 1 && g.ComputeInstances[0].ComputeSlices == g.ComputeSlices
}

// LayoutOf returns the layout formed by a GPU's instances.
func LayoutOf(m *Model, instances []GPUInstance) (Layout, error) {
	ins := make([]Instance, 0, len(instances))
	for _, gi := range instances {
		p, err := m.Profile(gi.Profile)
		if err != nil {
			return Layout{}, fmt.Errorf("GPU instance %d: %w", gi.ID, err)
		}
		ins = append(ins, Instance{Profile: p, Start: gi.Start})
	}
	return NewLayout(m, ins)
}

// BusyError reports an instance that cannot be changed because processes
// run on it. It matches ErrBusy.
type BusyError struct {
	Instance  string
	Processes []Process
}

func (e *BusyError) Error() string {
	pids := make([]string, len(e.Processes))
	for i, p := range e.Processes {
		pids[i] = fmt.Sprint(p.PID)
	}
	return fmt.Sprintf("instance %s is in use by process %s", e.Instance, strings.Join(pids, ", "))
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }
