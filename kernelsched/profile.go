package kernelsched

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// KernelStat is what profiling learned about one kernel id of one task,
// as FIKIT defines it: SK is the mean duration of the kernel, SG the mean
// idle gap from its end to the start of the task's next kernel in the same
// run. A kernel that ends a run has no gap after it; Gaps counts the
// occurrences that had one.
type KernelStat struct {
	ID        KernelID
	Regs      int // registers per thread, last seen
	SharedMem int // bytes of shared memory per block, last seen
	Count     int
	SK        time.Duration
	SKStd     time.Duration
	Gaps      int
	SG        time.Duration
	SGStd     time.Duration
	// SGMax is the longest gap seen after the kernel.
	SGMax time.Duration
	// NextLaunchMax is the longest time seen from this kernel's launch
	// call to the task's next launch call (0 when launch times were not
	// observed). The hook sees launch calls, so it tells best whether the
	// task is still in its run.
	NextLaunchMax time.Duration
}

// TaskProfile is the kernel profile of one task key.
type TaskProfile struct {
	Key  string
	Runs int
	// RunKernels is the mean number of kernels per run.
	RunKernels float64
	// RunSpan is the mean time from a run's first kernel start to its last
	// kernel end; RunBusy the mean sum of its kernel durations.
	RunSpan, RunBusy time.Duration
	// Kernels is sorted by kernel id (name, grid, block).
	Kernels []KernelStat
	index   map[KernelID]int
}

// Lookup returns the statistics of one kernel id.
func (p *TaskProfile) Lookup(id KernelID) (KernelStat, bool) {
	if p == nil {
		return KernelStat{}, false
	}
	if p.index == nil {
		p.buildIndex()
	}
	i, ok := p.index[id]
	if !ok {
		return KernelStat{}, false
	}
	return p.Kernels[i], true
}

func (p *TaskProfile) buildIndex() {
	p.index = make(map[KernelID]int, len(p.Kernels))
	for i, k := range p.Kernels {
		p.index[k.ID] = i
	}
}

// Observation is one kernel as the profiling phase saw it run. Launch is
// the host time of its launch call, when known (else zero).
type Observation struct {
	ID         KernelID
	Regs       int
	SharedMem  int
	Start, End time.Duration
	Launch     time.Duration
}

// ProfileBuilder accumulates runs of one task into a TaskProfile.
type ProfileBuilder struct {
	key        string
	runs       int
	kernels    float64
	span, busy float64
	acc        map[KernelID]*kernelAcc
}

// kernelAcc is Welford's running mean and variance of durations and gaps.
type kernelAcc struct {
	regs, smem int
	dur, gap   welford
	gapMax     float64
	launchMax  time.Duration
}

type welford struct {
	n        int
	mean, m2 float64
}

func (w *welford) add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (x - w.mean)
}

func (w *welford) std() float64 {
	if w.n < 2 {
		return 0
	}
	return math.Sqrt(w.m2 / float64(w.n))
}

// NewProfileBuilder starts the profile of the task with this key.
func NewProfileBuilder(key string) *ProfileBuilder {
	return &ProfileBuilder{key: key, acc: make(map[KernelID]*kernelAcc)}
}

// AddRun adds one run: the task's kernels in the order they started.
// A gap is the time from a kernel's end to the next kernel's start; when
// kernels overlap (several streams) it is zero.
func (b *ProfileBuilder) AddRun(run []Observation) error {
	if len(run) == 0 {
		return fmt.Errorf("profile %q: run %d has no kernels", b.key, b.runs)
	}
	for i, o := range run {
		if err := o.ID.Validate(); err != nil {
			return fmt.Errorf("profile %q: run %d kernel %d: %w", b.key, b.runs, i, err)
		}
		if o.End < o.Start {
			return fmt.Errorf("profile %q: run %d kernel %d (%s): ends at %v before it starts at %v", b.key, b.runs, i, o.ID.Name, o.End, o.Start)
		}
		if i > 0 && o.Start < run[i-1].Start {
			return fmt.Errorf("profile %q: run %d kernel %d starts at %v before kernel %d at %v: sort the run by start time", b.key, b.runs, i, o.Start, i-1, run[i-1].Start)
		}
	}
	var busy, end time.Duration
	for i, o := range run {
		a := b.acc[o.ID]
		if a == nil {
			a = &kernelAcc{}
			b.acc[o.ID] = a
		}
		a.regs, a.smem = o.Regs, o.SharedMem
		a.dur.add(float64(o.End - o.Start))
		if i+1 < len(run) {
			g := float64(max(0, run[i+1].Start-o.End))
			a.gap.add(g)
			a.gapMax = max(a.gapMax, g)
			if o.Launch > 0 && run[i+1].Launch >= o.Launch {
				a.launchMax = max(a.launchMax, run[i+1].Launch-o.Launch)
			}
		}
		busy += o.End - o.Start
		end = max(end, o.End)
	}
	b.runs++
	b.kernels += float64(len(run))
	b.span += float64(end - run[0].Start)
	b.busy += float64(busy)
	return nil
}

// AddGapAfter adds a gap that followed the last kernel of a run (id): the
// pause before the task's next run, when the task works in a steady loop
// (an inference request after a short think time). FIKIT fills such gaps
// like those within a run, and a task stays active through the longest
// one seen, so that a lower priority does not take the GPU in a pause the
// task will end.
func (b *ProfileBuilder) AddGapAfter(id KernelID, gap time.Duration) {
	a := b.acc[id]
	if a == nil || gap < 0 {
		return
	}
	g := float64(gap)
	a.gap.add(g)
	a.gapMax = max(a.gapMax, g)
}

// Profile returns the profile of the runs added so far.
func (b *ProfileBuilder) Profile() *TaskProfile {
	p := &TaskProfile{Key: b.key, Runs: b.runs}
	if b.runs > 0 {
		n := float64(b.runs)
		p.RunKernels = b.kernels / n
		p.RunSpan = roundNs(b.span / n)
		p.RunBusy = roundNs(b.busy / n)
	}
	for id, a := range b.acc {
		p.Kernels = append(p.Kernels, KernelStat{
			ID: id, Regs: a.regs, SharedMem: a.smem,
			Count: a.dur.n, SK: roundNs(a.dur.mean), SKStd: roundNs(a.dur.std()),
			Gaps: a.gap.n, SG: roundNs(a.gap.mean), SGStd: roundNs(a.gap.std()), SGMax: roundNs(a.gapMax), NextLaunchMax: a.launchMax,
		})
	}
	sortKernels(p.Kernels)
	p.buildIndex()
	return p
}

func roundNs(v float64) time.Duration { return time.Duration(math.Round(v)) }

func sortKernels(ks []KernelStat) {
	slices.SortFunc(ks, func(a, b KernelStat) int {
		return cmp.Or(cmp.Compare(a.ID.Name, b.ID.Name), compareDim(a.ID.Grid, b.ID.Grid), compareDim(a.ID.Block, b.ID.Block))
	})
}

func compareDim(a, b Dim3) int {
	return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
}
