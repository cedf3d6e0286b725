package sim

import (
	"math"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// mpsGPU implements MPS: the kernels of all tasks run at once, one per
// task (its stream order), on a shared pool of SMs.
//
// Each running kernel wants d SMs (its occupancy, capped by its MPS share)
// and is allotted some of them; it runs at the speed allotted/d. The
// allotment each kernel is due (its target) goes by MPS client priority:
// the kernels of the highest priority (lowest number) get what they want
// while SMs last, and the kernels of one priority that want more than is
// left share it in proportion. Without priorities and residency this is
// processor sharing: every kernel at sms/demand when oversubscribed.
//
// With residency, SMs go to a kernel at once only when they are free;
// a kernel holding more than its target keeps it until the end of its
// current wave of blocks (its duration over its waves, at its speed),
// when every allotment is set to its target (a review). So an online
// kernel that arrives while an offline kernel's long blocks fill the GPU
// waits for them, as on the real GPU, whatever its priority.
type mpsGPU struct {
	sms       int
	residency bool
	wait      time.Duration // GPUConfig.DispatchWait
	prio      []int         // MPS client priority per task
	queues    []fifoQueue
	running   []mpsRun
	last      time.Duration
	review    time.Duration
	busyAcc   time.Duration
	// scratch for retarget
	order []int
	want  []float64
}

type mpsRun struct {
	on        bool
	eligible  time.Duration // its blocks are dispatched from then on
	k         gpuKernel
	remaining float64 // ns of work at full speed
	rate      float64 // speed: the share of its wanted SMs it holds
}

func (r *mpsRun) want() float64 { return float64(max(1, r.k.sms)) }

func newMPSGPU(sms int, prio []int, residency bool, wait time.Duration) *mpsGPU {
	n := len(prio)
	return &mpsGPU{sms: sms, residency: residency, wait: wait, prio: prio, queues: make([]fifoQueue, n), running: make([]mpsRun, n),
		review: kernelsched.Never, want: make([]float64, n)}
}

func (g *mpsGPU) advance(now time.Duration) {
	if now <= g.last {
		return
	}
	el := float64(now - g.last)
	on := false
	for i := range g.running {
		if r := &g.running[i]; r.on {
			on = true
			r.remaining -= el * r.rate
		}
	}
	if on {
		g.busyAcc += now - g.last
	}
	g.last = now
}

func (g *mpsGPU) submit(now time.Duration, k gpuKernel) {
	g.advance(now)
	g.queues[k.task].push(k)
	if !g.running[k.task].on {
		g.start(now, k.task)
		g.retarget(false)
	}
}

func (g *mpsGPU) start(now time.Duration, task int) {
	if g.queues[task].len() == 0 {
		return
	}
	k := g.queues[task].pop()
	k.start = now
	r := mpsRun{on: true, k: k, remaining: float64(k.dur), eligible: now}
	if g.wait > 0 {
		for i := range g.running {
			if o := &g.running[i]; i != task && o.on && o.rate > 0 && g.prio[i] <= g.prio[task] {
				r.eligible = now + g.wait
				break
			}
		}
	}
	g.running[task] = r
}

// pending is the earliest time a started kernel becomes eligible
// (kernelsched.Never if none waits).
func (g *mpsGPU) pending() time.Duration {
	p := kernelsched.Never
	for i := range g.running {
		if r := &g.running[i]; r.on && r.eligible > g.last {
			p = min(p, r.eligible)
		}
	}
	return p
}

// targets computes every running kernel's due speed into g.want.
func (g *mpsGPU) targets() {
	g.order = g.order[:0]
	for i := range g.running {
		g.want[i] = 0
		if r := &g.running[i]; r.on && r.eligible <= g.last {
			g.order = append(g.order, i)
		} else {
			r.rate = 0
		}
	}
	slices.SortStableFunc(g.order, func(a, b int) int { return g.prio[a] - g.prio[b] })
	left := float64(g.sms)
	for lo := 0; lo < len(g.order); {
		hi := lo
		demand := 0.0
		for hi < len(g.order) && g.prio[g.order[hi]] == g.prio[g.order[lo]] {
			demand += g.running[g.order[hi]].want()
			hi++
		}
		rate := 1.0
		if demand > left {
			rate = max(0, left) / demand
		}
		for _, i := range g.order[lo:hi] {
			g.want[i] = rate
		}
		left -= demand
		lo = hi
	}
}

// retarget sets the speeds after a change. Without residency, or at a
// review, every kernel gets its target. With residency, kernels below
// their target take free SMs only (in priority order), and a review is
// due at the earliest wave end of a kernel above its target.
func (g *mpsGPU) retarget(review bool) {
	g.targets()
	if !g.residency || review {
		for _, i := range g.order {
			g.running[i].rate = g.want[i]
		}
		g.review = kernelsched.Never
		return
	}
	// Every kernel keeps what it holds (one above its target until a
	// review); what nobody holds is free.
	free := float64(g.sms)
	for _, i := range g.order {
		r := &g.running[i]
		free -= r.rate * r.want()
	}
	starved := false
	for _, i := range g.order {
		r := &g.running[i]
		if r.rate >= g.want[i] {
			continue
		}
		if free < minSMs {
			free = 0
		} else {
			add := min((g.want[i]-r.rate)*r.want(), free)
			r.rate += add / r.want()
			free -= add
		}
		if r.rate < g.want[i]-1e-9 {
			starved = true
		}
	}
	g.review = kernelsched.Never
	if !starved {
		return
	}
	for _, i := range g.order {
		if r := &g.running[i]; r.rate > g.want[i]+1e-9 {
			g.review = min(g.review, g.after(r.waveLeft()))
		}
	}
}

// minSMs is the share of an SM below which free SMs count as none (float
// rounding leaves such crumbs; a kernel given one would crawl).
const minSMs = 1e-6

// after is the time ns nanoseconds after the last update, saturating at
// kernelsched.Never.
func (g *mpsGPU) after(ns float64) time.Duration {
	if ns >= float64(kernelsched.Never-g.last) {
		return kernelsched.Never
	}
	return g.last + time.Duration(math.Ceil(max(0, ns)))
}

// waveLeft is the work, in nanoseconds at the kernel's speed, to the end
// of its current wave of blocks.
func (r *mpsRun) waveLeft() float64 {
	waves := float64(max(1, r.k.waves))
	block := float64(r.k.dur) / waves
	done := float64(r.k.dur) - r.remaining
	left := block - math.Mod(max(0, done), block)
	if left > r.remaining {
		left = r.remaining
	}
	return max(0, left) / r.rate
}

func (g *mpsGPU) due() time.Duration {
	d := min(g.review, g.pending())
	for i := range g.running {
		if r := &g.running[i]; r.on && r.rate > 0 {
			d = min(d, g.after(max(0, r.remaining)/r.rate))
		}
	}
	return d
}

func (g *mpsGPU) fire(now time.Duration, done []gpuKernel) []gpuKernel {
	prev := g.last
	g.advance(now)
	changed := false
	for i := range g.running {
		if r := &g.running[i]; r.on && r.eligible > prev && r.eligible <= now {
			changed = true // its dispatch wait is over
		}
	}
	for i := range g.running {
		r := &g.running[i]
		if r.on && r.rate > 0 && r.remaining <= 0.5 {
			done = append(done, r.k)
			r.on = false
			g.start(now, i)
			changed = true
		}
	}
	if review := now >= g.review; review || changed {
		g.retarget(review)
	}
	return done
}

func (g *mpsGPU) busy(now time.Duration) time.Duration {
	b := g.busyAcc
	if now > g.last {
		for i := range g.running {
			if g.running[i].on {
				return b + now - g.last
			}
		}
	}
	return b
}
