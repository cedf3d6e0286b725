package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mmkgpu/mmk/slo"
)

// Kind says whether a job is latency-critical.
type Kind string

// The kinds of job.
const (
	Online  Kind = "online"  // latency-critical (inference serving)
	Offline Kind = "offline" // throughput (training, batch inference)
)

// Limits on a submitted spec.
const (
	MaxNameLen    = 128
	MaxArgs       = 4096
	MaxArgBytes   = 128 << 10
	MaxEnv        = 1024
	MaxTaskKeyLen = 127 // the hook's task_key field holds 128 bytes with its NUL
	MaxMemoryMiB  = 1 << 22
	MaxBatch      = 1 << 20
)

// Workload is an optional hint for the predictor: which of its profiled
// job types the job is (model and mode) and its batch size.
type Workload struct {
	Model string `json:"model"`
	Batch int    `json:"batch,omitempty"`
	// Mode is "train" or "infer".
	Mode string `json:"mode"`
}

// Type is the predictor's job type, e.g. "resnet50_train".
func (w *Workload) Type() string {
	if w == nil || w.Model == "" {
		return ""
	}
	return w.Model + "_" + w.Mode
}

// Spec is what a user submits.
type Spec struct {
	// Name is shown in lists; default: the command's base name.
	Name string `json:"name,omitempty"`
	// Command is the program and its arguments: an argv, never a shell
	// string.
	Command []string `json:"command"`
	// Env is added to mmkd's environment for the job.
	Env map[string]string `json:"env,omitempty"`
	// WorkDir is the job's working directory: absolute, an existing
	// directory the job's user can enter (CheckWorkDir, at submission);
	// default: the job's own directory under mmkd's data directory.
	// mmkctl submit sends its current directory.
	WorkDir string `json:"workdir,omitempty"`
	// Kind is online or offline (default offline).
	Kind Kind `json:"type"`
	// Priority is 0 (highest) to 9 for the kernel scheduler; nil takes the
	// default of the kind (online 0, offline 5).
	Priority *int `json:"priority,omitempty"`
	// MPSPriority is the job's MPS client priority
	// (CUDA_MPS_CLIENT_PRIORITY): 0 normal, 1 below normal, which the GPU
	// gives way to normal clients' work. nil takes the default of the
	// kind (online 0, offline 1).
	MPSPriority *int `json:"mpsPriority,omitempty"`
	// MemoryMiB is the job's GPU memory estimate; 0 takes the daemon's
	// default.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// SLO is an online job's latency target in slo.Parse's form:
	// "p99=25ms", or a multiple of its latency alone, "p99=1.5x". mmk
	// measures the job's requests against it and restrains the offline
	// jobs beside it as little as holds it (docs/slo.md). Empty: the
	// daemon's default (slo.default), which may be none.
	SLO string `json:"slo,omitempty"`
	// Workload is the optional predictor hint.
	Workload *Workload `json:"workload,omitempty"`
	// TaskKey selects the job's kernel profile; default: derived from the
	// workload, else the name.
	TaskKey string `json:"taskKey,omitempty"`
	// Claim makes the job a claim job: a Kubernetes ResourceClaim whose
	// containers the kubelet starts with the environment mmk grants
	// (Job.Grant); mmk runs no process for it (claim.go).
	Claim *Claim `json:"claim,omitempty"`
}

// Placement is where a job runs.
type Placement struct {
	GPU     int    `json:"gpu"`
	GPUUUID string `json:"gpuUUID"`
	// Instance indexes the GPU's layout; Profile names its MIG profile
	// ("" on a GPU without MIG, which is one instance).
	Instance int    `json:"instance"`
	Profile  string `json:"profile,omitempty"`
	// InstanceKey names the instance's MPS daemon and kernel scheduler
	// inside mmkd (its profile and placement, stable across MIG changes);
	// InstanceName is how mmk shows the instance everywhere:
	// "gpu0/gi1" (partitioner.InstanceName), "gpu2" for a whole GPU.
	InstanceKey  string `json:"instanceKey"`
	InstanceName string `json:"instanceName,omitempty"`
	// Device is the job's CUDA_VISIBLE_DEVICES: a GPU or MIG UUID.
	Device string `json:"device"`
	// MPSPercent is its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 0 (and absent)
	// where MPS is off, which enforces no share.
	MPSPercent int `json:"mpsPercent,omitempty"`
	// Share is the share of the instance (percent) the placement loop
	// planned the job with, MPS or not; 0 in records from before it was
	// kept, whose MPSPercent held it (PlannedShare).
	Share int `json:"share,omitempty"`
	// Speed is the predictor's estimate of its speed there (1: alone on
	// the whole GPU).
	Speed float64 `json:"speed"`
	// MemLimitMiB is the GPU memory limit its MPS client was started
	// with (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT); 0: none.
	MemLimitMiB int64 `json:"memLimitMiB,omitempty"`
}

// PlannedShare is the share of its instance the placement loop planned
// the job with: Share, or MPSPercent in a record from before Share.
func (p Placement) PlannedShare() int {
	if p.Share > 0 {
		return p.Share
	}
	return p.MPSPercent
}

// Job is a submitted job and where it is in its life.
type Job struct {
	ID   string `json:"id"`
	Spec Spec   `json:"spec"`
	// Priority and MemoryMiB are the spec's with defaults applied.
	Priority  int    `json:"priority"`
	MemoryMiB int64  `json:"memoryMiB"`
	TaskKey   string `json:"taskKey"`
	State     State  `json:"state"`
	// Reason says why the job is in its state (a failure, a cancel, a
	// move), when there is something to say.
	Reason string `json:"reason,omitempty"`
	// Wait says why a pending job waits, as the placement loop's last
	// decision found; nil for a job that does not wait (or before the
	// loop looked at it). mmkd fills it in the job it answers with; the
	// store never holds it.
	Wait *Wait `json:"wait,omitempty"`
	// Restraint says what its instance's latency controller does to a
	// running offline job now, and for whom; nil where nothing. mmkd
	// fills it in the job it answers with; the store never holds it.
	Restraint *Restraint `json:"restraint,omitempty"`
	Placement *Placement `json:"placement,omitempty"`
	// PID is the job's process (group) id while it runs; ShimPID its
	// supervisor's.
	PID     int `json:"pid,omitempty"`
	ShimPID int `json:"shimPID,omitempty"`
	// ExitCode is the process's exit status once it ended (-1: killed by
	// a signal, see Signal).
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Restarts counts the times a reconfiguration restarted the job.
	Restarts int `json:"restarts"`
	// ShareCap, where set, is the most CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
	// the offline job's next starts on instance ShareCapAt (an instance
	// key) get: its latency controller held the offline kernels there to
	// that share of the TPCs for long (placement.reshare_after), and a
	// share set at the start costs the job less than a mask of the same
	// size. 0: none.
	ShareCap   int    `json:"shareCap,omitempty"`
	ShareCapAt string `json:"shareCapAt,omitempty"`
	// SLOSeen counts an online job's requests and late ones as mmkd last
	// saved them (every half minute and at its stop), so that its
	// attainment since submission outlives a restart of mmkd.
	SLOSeen *SLOSeen `json:"sloSeen,omitempty"`
	// Owner is the user the job runs as: who submitted it (nil for a job
	// of an mmk that did not record it: it runs as mmkd's user).
	Owner *Owner `json:"owner,omitempty"`
	// Grant is what a claim job's containers get once it is placed.
	Grant *Grant `json:"grant,omitempty"`
	// IdempotencyKey is the key it was submitted with, if any.
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	StartedAt      time.Time `json:"startedAt,omitzero"`
	FinishedAt     time.Time `json:"finishedAt,omitzero"`
}

// SLOSeen is an online job's requests and late ones, counted since its
// submission.
type SLOSeen struct {
	Requests uint64 `json:"requests"`
	Late     uint64 `json:"late"`
}

// Restraint is what a latency controller does to an offline job: State
// in a word (suspended, released, masked, held), How in words
// ("suspended", "masked to 33 TPCs", ...), the rung, the online jobs
// whose targets it holds (For, by id) and the reason of its last
// decision, in numbers.
type Restraint struct {
	State  string   `json:"state"`
	How    string   `json:"how"`
	Rung   string   `json:"rung"`
	For    []string `json:"for,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Wait is what holds a pending job: the constraint in words with
// numbers, its class (node.Wait* constants), since when it waits and its
// place in the queue.
type Wait struct {
	// Reason is the constraint, e.g. "needs 100 GiB; the most free is
	// 20 GiB on GPU 2 (3g.40gb)".
	Reason string `json:"reason"`
	// Class groups reasons for counting (/metrics): memory, memory-limit,
	// share, mig, slo, no-instance, start, other.
	Class string `json:"class"`
	// Since is when the job became pending.
	Since time.Time `json:"since"`
	// Position is the job's place among the waiting jobs, 1 first (the
	// order the loop places them in: arrival).
	Position int `json:"position"`
}

// FieldError is a bad field of a submitted spec.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s (got %s)", e.Field, e.Reason, quote(e.Value))
}

func quote(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}

var (
	envKeyPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	taskKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._:@+-]+$`)
	modelPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
)

// reservedEnv are variables mmk sets for a job; a spec may not set them.
var reservedEnv = []string{"CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
	"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_CLIENT_PRIORITY", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_INJECTION64_PATH"}

// ReservedEnv reports a variable mmk sets for every job.
func ReservedEnv(key string) bool {
	for _, r := range reservedEnv {
		if key == r {
			return true
		}
	}
	return strings.HasPrefix(key, "MMK_")
}

// Validate checks a spec and returns the first bad field as a
// *FieldError. A good latency target is rewritten in its normal form
// (slo.Target.String), which is what is stored and shown.
func (s *Spec) Validate() error {
	if s.Name != "" && (len(s.Name) > MaxNameLen || !Printable(s.Name)) {
		return &FieldError{"name", s.Name, fmt.Sprintf("must be printable text of at most %d bytes", MaxNameLen)}
	}
	if len(s.Command) == 0 && s.Claim == nil {
		return &FieldError{"command", s.Command, "must name a program (an argv: [\"python3\", \"train.py\"])"}
	}
	if len(s.Command) > MaxArgs {
		return &FieldError{"command", len(s.Command), fmt.Sprintf("has more than %d arguments", MaxArgs)}
	}
	if len(s.Command) > 0 && s.Command[0] == "" {
		return &FieldError{"command[0]", "", "the program is empty"}
	}
	for i, a := range s.Command {
		if len(a) > MaxArgBytes || strings.IndexByte(a, 0) >= 0 || !utf8.ValidString(a) {
			return &FieldError{fmt.Sprintf("command[%d]", i), a, fmt.Sprintf("must be UTF-8 without NUL, at most %d bytes", MaxArgBytes)}
		}
	}
	if len(s.Env) > MaxEnv {
		return &FieldError{"env", len(s.Env), fmt.Sprintf("has more than %d variables", MaxEnv)}
	}
	for k, v := range s.Env {
		switch {
		case !envKeyPattern.MatchString(k):
			return &FieldError{"env", k, "variable names are letters, digits and '_', not starting with a digit"}
		case ReservedEnv(k):
			return &FieldError{"env." + k, k, "is set by mmk for every job"}
		case len(v) > MaxArgBytes || strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v):
			return &FieldError{"env." + k, v, fmt.Sprintf("must be UTF-8 without NUL, at most %d bytes", MaxArgBytes)}
		}
	}
	if s.WorkDir != "" && (!filepath.IsAbs(s.WorkDir) || strings.IndexByte(s.WorkDir, 0) >= 0) {
		return &FieldError{"workdir", s.WorkDir, "must be an absolute path"}
	}
	if s.Kind != Online && s.Kind != Offline {
		return &FieldError{"type", s.Kind, "must be online or offline"}
	}
	if s.Priority != nil && (*s.Priority < 0 || *s.Priority > 9) {
		return &FieldError{"priority", *s.Priority, "must be 0 (highest) to 9"}
	}
	if s.MPSPriority != nil && (*s.MPSPriority < 0 || *s.MPSPriority > 1) {
		return &FieldError{"mpsPriority", *s.MPSPriority, "must be 0 (normal) or 1 (below normal)"}
	}
	if s.SLO != "" {
		if s.Kind != Online {
			return &FieldError{"slo", s.SLO, "only an online job has a latency target"}
		}
		t, err := slo.Parse(s.SLO)
		if err != nil {
			var e *slo.Error
			if errors.As(err, &e) {
				return &FieldError{"slo", s.SLO, e.Reason}
			}
			return &FieldError{"slo", s.SLO, err.Error()}
		}
		// Stored and shown in its normal form: " p99 = 25ms " is p99=25ms.
		s.SLO = t.String()
	}
	if s.MemoryMiB < 0 || s.MemoryMiB > MaxMemoryMiB {
		return &FieldError{"memoryMiB", s.MemoryMiB, fmt.Sprintf("must be 1 to %d MiB (0: the default)", MaxMemoryMiB)}
	}
	if w := s.Workload; w != nil {
		switch {
		case !modelPattern.MatchString(w.Model) || len(w.Model) > 64:
			return &FieldError{"workload.model", w.Model, "must be a model name such as resnet50"}
		case w.Mode != "train" && w.Mode != "infer":
			return &FieldError{"workload.mode", w.Mode, "must be train or infer"}
		case w.Batch < 0 || w.Batch > MaxBatch:
			return &FieldError{"workload.batch", w.Batch, fmt.Sprintf("must be 1 to %d (0: unknown)", MaxBatch)}
		}
	}
	if s.TaskKey != "" && (len(s.TaskKey) > MaxTaskKeyLen || !taskKeyPattern.MatchString(s.TaskKey)) {
		return &FieldError{"taskKey", s.TaskKey, fmt.Sprintf("must be letters, digits and ._:@+-, at most %d bytes", MaxTaskKeyLen)}
	}
	if s.Claim != nil {
		return s.validateClaim()
	}
	return nil
}

// Printable reports UTF-8 text without control characters: what a name,
// a header or a reason shown to people may hold.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Defaults fills what a valid spec left out: the name, priority, memory
// and task key the job gets.
func (s *Spec) Defaults(defaultMemoryMiB int64) (name string, priority int, memoryMiB int64, taskKey string) {
	name = s.Name
	if name == "" {
		name = filepath.Base(s.Command[0])
		if len(name) > MaxNameLen || !Printable(name) {
			name = "job"
		}
	}
	priority = 5
	if s.Kind == Online {
		priority = 0
	}
	if s.Priority != nil {
		priority = *s.Priority
	}
	memoryMiB = s.MemoryMiB
	if memoryMiB == 0 {
		memoryMiB = defaultMemoryMiB
	}
	taskKey = s.TaskKey
	if taskKey == "" {
		if t := s.Workload.Type(); t != "" {
			taskKey = t
			if s.Workload.Batch > 0 {
				taskKey = fmt.Sprintf("%s_bs%d", t, s.Workload.Batch)
			}
		} else {
			taskKey = sanitizeKey(name)
		}
	}
	return name, priority, memoryMiB, taskKey
}

// sanitizeKey makes a task key of a name: characters outside the key's
// alphabet become '_'.
func sanitizeKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && taskKeyPattern.MatchString(string(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= MaxTaskKeyLen {
			break
		}
	}
	if b.Len() == 0 {
		return "job"
	}
	return b.String()
}

// Type is the job's predictor job type ("" when it gave no workload).
func (j *Job) Type() string { return j.Spec.Workload.Type() }

// Online reports a latency-critical job.
func (j *Job) Online() bool { return j.Spec.Kind == Online }

// Target is the job's latency target, or the default given for an
// online job without one (the zero Target: none). A spec that passed
// Validate always parses.
func (j *Job) Target(def slo.Target) slo.Target {
	if !j.Online() {
		return slo.Target{}
	}
	if j.Spec.SLO == "" {
		return def
	}
	t, err := slo.Parse(j.Spec.SLO)
	if err != nil {
		return slo.Target{}
	}
	return t
}

// OfflineMPSPriority is an offline job's MPS client priority unless its
// spec says otherwise: below normal (online jobs run at 0, normal).
const OfflineMPSPriority = 1

// MPSClientPriority is the job's MPS client priority: the spec's, else 0 for an
// online job and OfflineMPSPriority for an offline one, so that the GPU
// gives way to online work wherever they share an MPS daemon.
func (s *Spec) MPSClientPriority() int {
	if s.MPSPriority != nil {
		return *s.MPSPriority
	}
	if s.Kind == Online {
		return 0
	}
	return OfflineMPSPriority
}
