package sim

import (
	"fmt"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// GPUModel names how the simulated GPU runs the kernels of several
// processes.
type GPUModel string

const (
	// TimeSliced is a GPU shared by processes without MPS: one context at
	// a time runs its kernels, one after another. A context keeps the GPU
	// while it has kernels and its time slice lasts; when it has none, or
	// its slice is over and another context has kernels, the GPU switches
	// (round robin) and pays Switch. Kernels are not preempted: a switch
	// waits for the running kernel to end.
	TimeSliced GPUModel = "timesliced"
	// MPS runs the kernels of all processes concurrently, each stream's in
	// order. A kernel occupies the SMs its occupancy needs (capped by its
	// MPS share); while the running kernels want more SMs than the
	// instance has, the SMs go first to the processes of the higher MPS
	// client priority (Task.MPSPriority) and are shared in proportion
	// within one priority (processor sharing). With BlockResidency a
	// kernel that gets fewer SMs than it is due waits for the blocks
	// already resident on them: other kernels give SMs back only at the
	// end of one of their waves of blocks. See mps.go.
	MPS GPUModel = "mps"
)

// GPUConfig configures the simulated GPU.
type GPUConfig struct {
	Model GPUModel
	// Slice and Switch: TimeSliced's time slice and context-switch cost.
	Slice, Switch time.Duration
	// LaunchLatency is the time from a launch call returning to its
	// kernel being able to start on the GPU.
	LaunchLatency time.Duration
	// SMs is the instance's SMs (MPS model); 0 takes the scheduler's.
	SMs int
	// BlockResidency (MPS model): a running kernel keeps its SMs until its
	// current wave of blocks ends, even when a kernel of a higher priority
	// wants them; the GPU does not preempt resident blocks. Off, SMs move
	// at once (the model of the earlier results).
	BlockResidency bool
	// DispatchWait (MPS model): a kernel that starts while a kernel of
	// another task of the same or a higher MPS client priority runs gets
	// no SM for this long, as the GPU's work distributor serves the grid
	// it is dispatching first. A kernel of a higher priority than every
	// running one skips the queue. 0: none (the model of the earlier
	// results).
	DispatchWait time.Duration
	// ShareStretch (MPS model): a kernel held by its task's MPS share to
	// fewer SMs than its grid would fill runs more waves of blocks: its
	// traced duration times its waves on the share over its waves on the
	// whole instance. Off: the traced duration whatever the share (the
	// model of the earlier results, kernel effects included).
	ShareStretch bool
}

// DefaultGPU is the time-sliced H200 as calibrated in
// docs/results/kernelsched.md: a 1.63 ms slice and 100 us per context
// switch reproduce, for resnet50 bs=1 inference (2 ms think) next to a
// vgg19 trainer, both the high-priority slowdown measured on the H200
// (p50 1.355x in GPU-FACTS.md; 1.08x-1.80x in bench/gpu/colocate.sh runs)
// and the trainer's loss (77-79 % of its alone throughput kept); 5 us from
// launch call to kernel start (the traces' smallest launch-to-start lag is
// 5.8 us).
func DefaultGPU() GPUConfig {
	return GPUConfig{Model: TimeSliced, Slice: 1630 * time.Microsecond, Switch: 100 * time.Microsecond, LaunchLatency: 5 * time.Microsecond}
}

func (g GPUConfig) validate() error {
	switch {
	case g.Model != TimeSliced && g.Model != MPS:
		return fmt.Errorf("gpu model: %q is not one of %s, %s", g.Model, TimeSliced, MPS)
	case g.Slice <= 0 && g.Model == TimeSliced:
		return fmt.Errorf("gpu slice: %v must be positive", g.Slice)
	case g.Switch < 0:
		return fmt.Errorf("gpu switch: %v is negative", g.Switch)
	case g.LaunchLatency < 0:
		return fmt.Errorf("gpu launch latency: %v is negative", g.LaunchLatency)
	case g.DispatchWait < 0:
		return fmt.Errorf("gpu dispatch wait: %v is negative", g.DispatchWait)
	case g.SMs < 0:
		return fmt.Errorf("gpu SMs: %d is negative", g.SMs)
	}
	return nil
}

// gpuKernel is a released kernel on the simulated GPU.
type gpuKernel struct {
	task int
	tag  int // the kernel's index in its iteration
	seq  uint64
	dur  time.Duration
	sms  int
	// waves is how many waves of blocks the kernel runs on its SMs.
	waves int
	start time.Duration
}

// gpu is a simulated GPU: it takes kernels, says when its next kernel
// ends, and completes kernels at that time.
type gpu interface {
	submit(now time.Duration, k gpuKernel)
	due() time.Duration
	fire(now time.Duration, done []gpuKernel) []gpuKernel
	busy(now time.Duration) time.Duration
}

// fifoQueue is one context's or stream's kernels in order.
type fifoQueue struct {
	ks   []gpuKernel
	head int
}

func (q *fifoQueue) len() int         { return len(q.ks) - q.head }
func (q *fifoQueue) push(k gpuKernel) { q.ks = append(q.ks, k) }
func (q *fifoQueue) pop() gpuKernel {
	k := q.ks[q.head]
	q.head++
	if q.head == len(q.ks) {
		q.ks, q.head = q.ks[:0], 0
	}
	return k
}

// timeSliced implements TimeSliced.
type timeSliced struct {
	cfg        GPUConfig
	queues     []fifoQueue
	cur        int
	sliceStart time.Duration
	running    bool
	run        gpuKernel
	end        time.Duration
	busyAcc    time.Duration
}

func newTimeSliced(cfg GPUConfig, tasks int) *timeSliced {
	return &timeSliced{cfg: cfg, queues: make([]fifoQueue, tasks), cur: -1}
}

func (g *timeSliced) submit(now time.Duration, k gpuKernel) {
	g.queues[k.task].push(k)
	if !g.running {
		g.dispatch(now)
	}
}

func (g *timeSliced) due() time.Duration {
	if !g.running {
		return kernelsched.Never
	}
	return g.end
}

func (g *timeSliced) fire(now time.Duration, done []gpuKernel) []gpuKernel {
	if !g.running || now < g.end {
		return done
	}
	g.running = false
	g.busyAcc += g.run.dur
	done = append(done, g.run)
	g.dispatch(now)
	return done
}

func (g *timeSliced) busy(now time.Duration) time.Duration {
	b := g.busyAcc
	if g.running && now > g.run.start {
		b += min(now, g.end) - g.run.start
	}
	return b
}

// dispatch starts the next kernel: the current context's while its slice
// lasts or nobody else waits, else the next waiting context's.
func (g *timeSliced) dispatch(now time.Duration) {
	ctx := -1
	if g.cur >= 0 && g.queues[g.cur].len() > 0 && (now-g.sliceStart < g.cfg.Slice || !g.othersWait()) {
		ctx = g.cur
	} else {
		n := len(g.queues)
		for i := 1; i <= n; i++ {
			c := (g.cur + i + n) % n
			if g.queues[c].len() > 0 {
				ctx = c
				break
			}
		}
	}
	if ctx < 0 {
		return
	}
	start := now
	if ctx != g.cur {
		if g.cur >= 0 {
			start += g.cfg.Switch
		}
		g.cur, g.sliceStart = ctx, start
	} else if now-g.sliceStart >= g.cfg.Slice {
		g.sliceStart = now // alone: a new slice
	}
	k := g.queues[ctx].pop()
	k.start = start
	g.run, g.running, g.end = k, true, start+k.dur
}

func (g *timeSliced) othersWait() bool {
	for i := range g.queues {
		if i != g.cur && g.queues[i].len() > 0 {
			return true
		}
	}
	return false
}
