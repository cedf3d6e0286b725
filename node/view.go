package node

import (
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"strconv"
)

// PlanView is the node's current placement: every GPU, how it is cut,
// and which job runs where at which MPS percentage. The API's
// /api/v1/plan and /api/v1/gpus/instances serve it.
type PlanView struct {
	// Version counts the plan's publications: a view that has this
	// version has this plan.
	Version uint64    `json:"version"`
	GPUs    []GPUView `json:"gpus"`
	// Waiting are the pending jobs that found no place, in arrival order,
	// the first MaxWaitingShown of them; WaitingTotal counts them all.
	Waiting      []string `json:"waiting"`
	WaitingTotal int      `json:"waitingTotal"`
	// WaitingJobs are the waiting jobs of Waiting whose wait the last
	// decision explained, with what holds each; WaitingByClass counts
	// all waiting jobs by the class of what holds them (jobs.Wait.Class).
	WaitingJobs    []WaitingView  `json:"waitingJobs"`
	WaitingByClass map[string]int `json:"waitingByClass"`
	// Total is the predicted system throughput (sum of job speeds).
	Total float64 `json:"total"`
	// Decisions counts the placement loop's runs since mmkd started;
	// DecideSeconds is the time Algorithm 1 took over all of them, and
	// LastDecideSeconds in the last one.
	Decisions         int     `json:"decisions"`
	DecideSeconds     float64 `json:"decideSeconds"`
	LastDecideSeconds float64 `json:"lastDecideSeconds"`
}

// GPUView is one GPU of the plan.
type GPUView struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	Model string `json:"model"`
	// MIG is whether the GPU runs MIG; a GPU without MIG is one instance
	// of the whole-GPU profile.
	MIG bool `json:"mig"`
	// Layout is the canonical layout text ("" without MIG).
	Layout string `json:"layout"`
	// SMs and MemoryMiB are the GPU's; its 7 compute x 8 memory slices
	// are drawn from the instances' Start and Size.
	SMs       int            `json:"sms"`
	MemoryMiB int64          `json:"memoryMiB"`
	Instances []InstanceView `json:"instances"`
}

// InstanceView is one GPU instance (or a whole GPU without MIG).
type InstanceView struct {
	// Name is how mmk shows the instance everywhere: "gpu0/gi1", the GPU
	// and NVML's GPU-instance id (GI, absent for a whole GPU), or "gpu2"
	// for a GPU without MIG (partitioner.InstanceName).
	Name string `json:"name"`
	GI   *int   `json:"gi,omitempty"`
	// Index is the instance's position in the layout; Key names its MPS
	// daemon and kernel scheduler inside mmkd.
	Index int    `json:"index"`
	Key   string `json:"key"`
	// Profile is its MIG profile; "" for a GPU without MIG, which is
	// the whole GPU, no profile.
	Profile string `json:"profile,omitempty"`
	// Start and Size are its memory slices (of 8); ComputeSlices of 7.
	Start         int   `json:"start"`
	Size          int   `json:"size"`
	ComputeSlices int   `json:"computeSlices"`
	SMs           int   `json:"sms"`
	MemoryMiB     int64 `json:"memoryMiB"`
	// Device is the CUDA_VISIBLE_DEVICES of its jobs (GPU or MIG UUID).
	Device string `json:"device"`
	// MPS says whether an MPS daemon serves it.
	MPS  bool         `json:"mps"`
	Jobs []PlacedView `json:"jobs"`
	// RequestedMiB is the GPU memory its placed jobs (placed, running,
	// restarting) asked for; RunningMiB that of its running jobs alone.
	// What NVML measures on the instance is in the usage view
	// (UsageView.Devices, by Device), where the backend can read it.
	RequestedMiB int64 `json:"requestedMiB"`
	RunningMiB   int64 `json:"runningMiB"`
}

// PlacedView is a job in an instance.
type PlacedView struct {
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	Kind  jobs.Kind  `json:"type"`
	State jobs.State `json:"state"`
	// Percent is its MPS share; 0 (absent) where MPS is off.
	Percent int     `json:"mpsPercent,omitempty"`
	Speed   float64 `json:"speed"`
	// MemoryMiB is the GPU memory the job asked for (its spec's, or the
	// node's default).
	MemoryMiB int64 `json:"memoryMiB"`
}

// SchedView is one instance's kernel scheduler.
type SchedView struct {
	// Instance is the instance's key inside mmkd; Name is how mmk shows
	// it ("gpu0/gi1", InstanceView.Name).
	Instance string          `json:"instance"`
	Name     string          `json:"name"`
	Policy   string          `json:"policy"`
	Socket   string          `json:"socket"`
	Counters server.Counters `json:"counters"`
	// Queues are the launches held now, per priority 0 (highest) to 9.
	Queues [10]int `json:"queues"`
	// Tasks are the jobs' processes connected to it.
	Tasks []server.TaskView `json:"tasks"`
	// Timeline is when each task's kernels ran (by their profiled
	// durations, after their release) over the last seconds, oldest first.
	Timeline []server.Span `json:"timeline"`
}

// JobFilter selects jobs in a list; zero fields select all.
type JobFilter struct {
	States []jobs.State
	Kind   jobs.Kind
	// Name selects jobs whose name contains it.
	Name string
	// Limit caps the number returned (newest first when set).
	Limit int
	// Before, if set, selects jobs created before the job of this id
	// (ids sort by creation): the next page of a list.
	Before string
	// Owner, if set, selects the jobs of this user: a name or a uid
	// (OwnedBy).
	Owner string
}

// OwnedBy reports whether job j runs as user who: a user name, or a uid
// in decimal. A job of no recorded owner runs as mmkd's user.
func OwnedBy(j jobs.Job, who string) bool {
	o := j.Owner
	if o == nil {
		self := jobs.Self()
		o = &self
	}
	return who != "" && (o.Name == who || strconv.Itoa(o.UID) == who)
}

// MaxWaitingShown bounds PlanView.Waiting: a queue of tens of thousands
// of jobs is counted, not listed, in every copy of the plan.
const MaxWaitingShown = 1000
