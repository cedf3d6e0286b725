package kernelsched

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Policy decides which held launches go to the GPU. The scheduler calls
// Arrived, Completed and Synced as events happen and Schedule after them; Schedule
// releases launches with Scheduler.Release and returns when it wants to
// be called again with nothing else happening (Never: no timer).
type Policy interface {
	Name() string
	TaskAdded(s *Scheduler, t *Task)
	TaskRemoved(s *Scheduler, t *Task)
	Arrived(s *Scheduler, t *Task, l *Launch, now time.Duration)
	Completed(s *Scheduler, t *Task, seq uint64, now time.Duration)
	// Synced: a synchronisation of t returned; its run is over.
	Synced(s *Scheduler, t *Task, now time.Duration)
	Schedule(s *Scheduler, now time.Duration) time.Duration
}

// atID sets a policy's per-task value of task id in list, growing it for
// a new id: ids of removed tasks are taken again (Scheduler.AddTask).
func atID[T any](list []T, id TaskID, v T) []T {
	for len(list) <= int(id) {
		var zero T
		list = append(list, zero)
	}
	list[id] = v
	return list
}

// policies maps each name to its constructor.
var policies = map[string]func() Policy{
	"fifo":      func() Policy { return fifo{} },
	"exclusive": func() Policy { return &exclusive{} },
	"fikit":     func() Policy { return &fikit{} },
	"mmk":       func() Policy { return newMMK(false) },
	"fikit+mmk": func() Policy { return newMMK(true) },
	"hpf":       func() Policy { return &hpf{} },
	"ffs":       func() Policy { return &ffs{} },
	"piv":       func() Policy { return &piv{} },
	"dprr":      func() Policy { return &dprr{} },
	"guard":     func() Policy { return &guard{} },
}

// Policies lists the policy names in a fixed order: baselines first.
func Policies() []string {
	return []string{"fifo", "exclusive", "fikit", "mmk", "fikit+mmk", "hpf", "ffs", "piv", "dprr", "guard"}
}

// NewPolicy returns a fresh policy by name.
func NewPolicy(name string) (Policy, error) {
	mk, ok := policies[name]
	if !ok {
		return nil, fmt.Errorf("policy %q is not one of %s", name, strings.Join(Policies(), ", "))
	}
	return mk(), nil
}

// profileless is implemented by policies that decide without kernel
// profiles.
type profileless interface {
	Profileless()
}

// Profileless: fifo predicts nothing.
func (fifo) Profileless() {}

// NeedsProfiles reports whether the named policy decides from kernel
// profiles (predicted durations and gaps); a launch path need not run a
// task's profiling phase for one that does not.
func NeedsProfiles(name string) (bool, error) {
	p, err := NewPolicy(name)
	if err != nil {
		return false, err
	}
	_, no := p.(profileless)
	return !no, nil
}

// ParsePolicies splits a comma-separated list and checks every name.
func ParsePolicies(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := policies[n]; !ok {
			return nil, fmt.Errorf("policy %q is not one of %s", n, strings.Join(Policies(), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policy named in %q", list)
	}
	return out, nil
}

// hooks gives policies no-op event methods to override.
type hooks struct{}

func (hooks) TaskAdded(*Scheduler, *Task)                        {}
func (hooks) TaskRemoved(*Scheduler, *Task)                      {}
func (hooks) Arrived(*Scheduler, *Task, *Launch, time.Duration)  {}
func (hooks) Completed(*Scheduler, *Task, uint64, time.Duration) {}
func (hooks) Synced(*Scheduler, *Task, time.Duration)            {}

// fifo releases every launch at once: what the GPU does when processes
// share it without a scheduler. Under the hook every task goes at once
// (AtOnce): the hook only reports, which is MPS client priority alone
// with mmk observing.
type fifo struct{ hooks }

func (fifo) Name() string { return "fifo" }

func (fifo) Schedule(s *Scheduler, now time.Duration) time.Duration {
	for p := range NumPriorities {
		for len(s.queues[p]) > 0 {
			releaseAll(s, s.queues[p][0], now, false)
		}
	}
	return Never
}

// releaseAll releases t's held launches, up to the in-flight bound when
// limited, and reports whether any is left held.
func releaseAll(s *Scheduler, t *Task, now time.Duration, limited bool) bool {
	for s.CanRelease(t, limited) {
		s.Release(t, now)
	}
	return t.Pending() > 0
}

// releaseOldestFirst releases the held launches of tasks, interleaved in
// the order they arrived (equal priorities share FIFO).
func releaseOldestFirst(s *Scheduler, tasks []*Task, now time.Duration, limited func(*Task) bool) {
	for {
		var best *Task
		for _, t := range tasks {
			if !s.CanRelease(t, limited(t)) {
				continue
			}
			if best == nil || t.pending[t.head].Seq < best.pending[best.head].Seq {
				best = t
			}
		}
		if best == nil {
			return
		}
		s.Release(best, now)
	}
}

// Compile-time checks that every policy implements Policy.
var (
	_ Policy = fifo{}
	_ Policy = (*exclusive)(nil)
	_ Policy = (*fikit)(nil)
	_ Policy = (*mmk)(nil)
	_ Policy = (*hpf)(nil)
	_ Policy = (*ffs)(nil)
	_ Policy = (*piv)(nil)
	_ Policy = (*dprr)(nil)
	_ Policy = (*guard)(nil)
)

// atOnce is implemented by policies that release some tasks' launches as
// soon as they arrive, whatever else happens.
type atOnce interface {
	AtOnce(s *Scheduler, t *Task) bool
}

// ReleasesAtOnce reports whether the policy releases every launch of t on
// arrival (fikit: a task of the highest registered priority; mmk: an
// online task). A launch path may then let such launches go without
// waiting for the decision, and report them after the fact.
func (s *Scheduler) ReleasesAtOnce(t *Task) bool {
	p, ok := s.policy.(atOnce)
	return ok && !t.removed && p.AtOnce(s, t)
}

// AtOnce: fifo holds nothing.
func (fifo) AtOnce(*Scheduler, *Task) bool { return true }

// AtOnce: the top registered priority holds the GPU whenever it is
// active, and nothing limits its releases.
func (*fikit) AtOnce(s *Scheduler, t *Task) bool { return t.Spec.Priority == s.topPriority }

// AtOnce: online kernels always go; with gap filling, so do those of the
// top registered priority.
func (m *mmk) AtOnce(s *Scheduler, t *Task) bool {
	return t.Spec.Online || (m.fill && t.Spec.Priority == s.topPriority)
}

// quieter is implemented by policies that need none of some tasks'
// launches at times.
type quieter interface {
	Quiet(s *Scheduler, t *Task) bool
}

// Quiet reports whether the policy needs none of t's launches now: it
// releases them at once and decides nothing from them, for t or for any
// other task. A launch path may then stop reporting them (the hook turns
// its launch callbacks off) until Quiet turns false. Policies that learn
// from every launch (guard, the holders) never say so.
func (s *Scheduler) Quiet(t *Task) bool {
	p, ok := s.policy.(quieter)
	return ok && s.ReleasesAtOnce(t) && p.Quiet(s, t)
}

// Quiet: fifo decides nothing from launches.
func (fifo) Quiet(*Scheduler, *Task) bool { return true }

// Quiet: a task alone has no gaps to fill for anyone.
func (*fikit) Quiet(s *Scheduler, t *Task) bool { return s.alone(t) }

// Quiet: a task alone has no one to be protected from or to protect.
func (*mmk) Quiet(s *Scheduler, t *Task) bool { return s.alone(t) }

// alone reports whether t is the only registered task.
func (s *Scheduler) alone(t *Task) bool { return !t.removed && s.live == 1 }

// statser is implemented by policies with counters or state of their own.
type statser interface {
	Stats() map[string]float64
}

// PolicyStats are the policy's own counters and state (nil if it keeps
// none), for views and benchmarks.
func (s *Scheduler) PolicyStats() map[string]float64 {
	if p, ok := s.policy.(statser); ok {
		return p.Stats()
	}
	return nil
}
