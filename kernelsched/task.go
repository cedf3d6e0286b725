package kernelsched

import (
	"fmt"
	"math"
	"time"
)

// TaskID names a registered task; ids are small integers handed out by
// AddTask and never reused.
type TaskID int

// TaskSpec describes a task when it registers.
type TaskSpec struct {
	// Name is shown in results; Key selects the task's kernel profile.
	Name, Key string
	// Priority is 0 (highest) to 9.
	Priority int
	// Online marks a latency-critical task (mmk launches its kernels first).
	Online bool
	// MPSPercent is the task's MPS active thread percentage, 1-100
	// (0 means 100). It caps the SMs a kernel can occupy and sets mmk's
	// waiting threshold.
	MPSPercent int
	// Weight is the task's share under ffs; 0 means NumPriorities-Priority.
	Weight int
	// Profile predicts the task's kernels; nil means nothing is known.
	Profile *TaskProfile
}

func (s TaskSpec) validate() error {
	switch {
	case s.Priority < 0 || s.Priority >= NumPriorities:
		return fmt.Errorf("task %q: priority %d is outside 0..%d", s.Name, s.Priority, NumPriorities-1)
	case s.MPSPercent < 0 || s.MPSPercent > 100:
		return fmt.Errorf("task %q: MPS percentage %d is outside 1..100", s.Name, s.MPSPercent)
	case s.Weight < 0:
		return fmt.Errorf("task %q: weight %d is negative", s.Name, s.Weight)
	}
	return nil
}

// Estimate is the profile's prediction for one launch: SK and SG, and
// how long the task is still taken to be in its run: Hold after the
// kernel ends (the longest gap profiling saw after it) and NextLaunch
// after its launch call (the longest time to the next launch call). Gap
// filling uses the mean SG; deciding that a task went idle uses the
// longest times, so that a gap longer than the mean (the same kernel id
// is followed by different gaps) does not hand the GPU to another task.
type Estimate struct {
	SK, SG, Hold, NextLaunch time.Duration
	Known                    bool
}

// Estimate looks up a kernel id in the profile.
func (p *TaskProfile) Estimate(id KernelID) Estimate {
	k, ok := p.Lookup(id)
	if !ok {
		return Estimate{}
	}
	return Estimate{SK: k.SK, SG: k.SG, Hold: k.SGMax, NextLaunch: k.NextLaunchMax, Known: true}
}

// Launch is one intercepted kernel launch, held until a policy releases it.
type Launch struct {
	Task   TaskID
	Kernel KernelID
	// Regs and SharedMem complete the kernel's shape (zero: unknown).
	Regs, SharedMem int
	// BandwidthGBs is the kernel's memory-bandwidth demand, if known.
	BandwidthGBs float64
	// Est is the prediction from the task's profile (see
	// TaskProfile.Estimate); the caller attaches it.
	Est Estimate
	// Tag is the caller's own reference (the simulator's kernel index).
	Tag int

	// Set by Arrive.
	Seq     uint64
	Arrived time.Duration
	// SMs and SharedMemTotal are the launch's demand on the instance,
	// capped by the task's MPS share; BlocksPerSM its occupancy.
	SMs            int
	SharedMemTotal int64
	BlocksPerSM    int
}

// BlockTime is how long one block of the launch is predicted to hold its
// SM: the predicted duration over the waves of blocks the grid needs on
// the SMs the task may use. A kernel of another task that needs that SM
// waits up to this long for it. Zero when the duration is unknown.
func (l *Launch) BlockTime(smCap int) time.Duration {
	if !l.Est.Known || l.BlocksPerSM < 1 || smCap < 1 {
		return 0
	}
	perWave := uint64(l.BlocksPerSM) * uint64(smCap)
	blocks := l.Kernel.Grid.Count()
	waves := (blocks + perWave - 1) / perWave
	if waves <= 1 {
		return l.Est.SK
	}
	return time.Duration(uint64(l.Est.SK) / waves)
}

// released is a kernel on its way to or on the GPU.
type released struct {
	seq  uint64
	sms  int
	smem int64
	bw   float64
	est  Estimate
}

// Task is a registered task as policies see it.
type Task struct {
	ID   TaskID
	Spec TaskSpec

	pending []Launch // FIFO: pending[head:] waits
	head    int
	out     []released // released, not completed, in stream order

	smCap   int // SMs the task's MPS share allows
	weight  int
	removed bool

	// Predictions after the task's last release or completion.
	gapUntil  time.Duration // end of the predicted idle gap after it
	callUntil time.Duration // latest predicted time of the next launch call
	windowEnd time.Duration // end of the gap fikit may fill (closed on arrival)

	position int // kernels released in the current run (hpf's remaining time)

	// The current run as synchronisations delimit it (see InRun).
	inRun    bool
	runStart time.Duration
	// lastEnd is the predicted end of the task's last released kernel.
	lastEnd time.Duration
}

// InRun reports whether the task launched since its last synchronisation
// returned: for an online job, a request is running. A task that never
// synchronises stays in its run from its first launch.
func (t *Task) InRun() bool { return t.inRun }

// RunStart is the arrival of the first launch of the current (or last) run.
func (t *Task) RunStart() time.Duration { return t.runStart }

// SMCap is the SMs the task's MPS share lets a kernel occupy.
func (t *Task) SMCap() int { return t.smCap }

// LastEnd is the predicted end of the task's last released kernel.
func (t *Task) LastEnd() time.Duration { return t.lastEnd }

// Pending is the number of held launches.
func (t *Task) Pending() int { return len(t.pending) - t.head }

// Outstanding is the number of released kernels not yet completed.
func (t *Task) Outstanding() int { return len(t.out) }

// Head is the oldest held launch.
func (t *Task) Head() (*Launch, bool) {
	if t.head >= len(t.pending) {
		return nil, false
	}
	return &t.pending[t.head], true
}

// Busy reports held or unfinished kernels.
func (t *Task) Busy() bool { return t.Pending() > 0 || len(t.out) > 0 }

// Active reports a task that is busy or, by its profile, between two
// kernels of the same run: the GPU is still its.
func (t *Task) Active(now time.Duration) bool {
	return t.Busy() || now < t.idleAt()
}

// idleAt is when a task that is not busy stops being active.
func (t *Task) idleAt() time.Duration { return max(t.gapUntil, t.callUntil) }

// wakeAt is the timer a policy needs for a task that holds the GPU while
// it is not busy: when it goes idle. Never when it is busy or idle already.
func (t *Task) wakeAt(now time.Duration) time.Duration {
	if t.Busy() || t.idleAt() <= now {
		return Never
	}
	return t.idleAt()
}

// Remaining predicts how long the task's current run still needs, from
// its profile's mean run span and the kernels released since the run
// began. Without a profile it is unknown: a very long time.
func (t *Task) Remaining() time.Duration {
	p := t.Spec.Profile
	if p == nil || p.RunKernels < 1 {
		return time.Duration(math.MaxInt64 / 4)
	}
	n := int(math.Round(p.RunKernels))
	done := float64(t.position%n) / float64(n)
	return time.Duration(float64(p.RunSpan) * (1 - done))
}

func (t *Task) popHead() Launch {
	l := t.pending[t.head]
	t.pending[t.head] = Launch{}
	t.head++
	if t.head == len(t.pending) {
		t.pending, t.head = t.pending[:0], 0
	} else if t.head >= 64 && t.head*2 >= len(t.pending) {
		n := copy(t.pending, t.pending[t.head:])
		clear(t.pending[n:])
		t.pending, t.head = t.pending[:n], 0
	}
	return l
}
