package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rung is one restraint on the offline jobs of an instance. The zero Rung
// is MPS client priority alone: offline jobs run at priority 1 (below
// normal) and no launch is held.
type Rung struct {
	// Guard holds an offline kernel while an online request runs when its
	// predicted block time exceeds Tau (kernelsched's guard policy with a
	// fixed threshold); HoldAll holds every offline kernel during requests.
	Guard   bool
	Tau     time.Duration
	HoldAll bool
	// TPCs is the fraction of the GPU's TPCs offline kernels may use, in
	// (0, 1); 0 means all (no mask). With the GPU's slot map (TPCMap) the
	// mask keeps that share of its TPCs (TPCMap.KeepSlots); without one it
	// keeps the first F of the kernel descriptor's mask slots, among which
	// an H100 has holes (docs/results/slo-h100-tpcmap.md), so somewhat
	// less.
	TPCs float64
	// TPCTasks is how many offline tasks the mask holds, the first to
	// have connected whose hooks can mask (0: all of them). With several
	// trainers one shared mask holds them all to the same TPCs
	// (docs/results/slo-h100-d737c04.md: 0.75-0.89x the best static
	// setting at the medium load); masking the first N is a finer step
	// ("tpcs=0.75@1": 0.91-0.94x, docs/results/slo-h100-tpcs.md). Beside
	// N or fewer tasks that can mask it is the shared mask (Alike).
	TPCTasks int
	// PerRequest holds the mask only while an online request is in
	// flight ("tpcs=0.5/req"): offline kernels launched meanwhile keep
	// the share TPCs, the others every TPC (issue 52's request-scoped
	// masks; on an H200, in one of two rounds of the SLO benchmark,
	// tpcs=0.5/req held the batch-32 service at its high load where
	// tpcs=0.5 throughout did not, the trainer 1.2-1.5x as fast:
	// docs/results/slo-h200-2026-11-29-reqmask). It restrains less than
	// the same mask throughout.
	PerRequest bool
	// Suspend stops the offline jobs' processes (cgroup freezer, or
	// SIGSTOP) until the rung is left.
	Suspend bool
}

// String is the rung's text form, which ParseRung reads back:
// "priority", "guard=256µs", "hold", "tpcs=0.5" (or "tpcs=0.5@1": the
// first offline task only; "tpcs=0.5/req": during requests only),
// "suspend", joined by "+".
func (r Rung) String() string {
	var p []string
	switch {
	case r.HoldAll:
		p = append(p, "hold")
	case r.Guard:
		p = append(p, "guard="+r.Tau.String())
	}
	if r.TPCs > 0 {
		t := "tpcs=" + strconv.FormatFloat(r.TPCs, 'f', -1, 64)
		if r.TPCTasks > 0 {
			t += "@" + strconv.Itoa(r.TPCTasks)
		}
		if r.PerRequest {
			t += "/req"
		}
		p = append(p, t)
	}
	if r.Suspend {
		p = append(p, "suspend")
	}
	if len(p) == 0 {
		return "priority"
	}
	return strings.Join(p, "+")
}

// Holds reports whether the rung needs the kernel scheduler to hold
// offline launches (guard).
func (r Rung) Holds() bool { return r.Guard || r.HoldAll }

// ParseRung reads a rung's text form.
func ParseRung(s string) (Rung, error) {
	var r Rung
	s = strings.TrimSpace(s)
	if s == "" {
		return r, fmt.Errorf("rung: empty; want priority, guard=DURATION, hold, tpcs=FRACTION[@TASKS][/req] or suspend, joined by +")
	}
	for _, part := range strings.Split(s, "+") {
		part = strings.TrimSpace(part)
		k, v, hasV := strings.Cut(part, "=")
		switch {
		case k == "priority" && !hasV:
		case k == "hold" && !hasV:
			r.HoldAll, r.Guard, r.Tau = true, false, 0
		case k == "suspend" && !hasV:
			r.Suspend = true
		case k == "guard" && hasV:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Rung{}, fmt.Errorf("rung %q: guard=%s: want a positive block-time threshold such as 256us", s, v)
			}
			if !r.HoldAll {
				r.Guard, r.Tau = true, d
			}
		case k == "tpcs" && hasV:
			if r.TPCs > 0 {
				return Rung{}, fmt.Errorf("rung %q: tpcs=%s: a second tpcs part; want one", s, v)
			}
			v, r.PerRequest = strings.CutSuffix(v, "/req")
			f, n, hasN := strings.Cut(v, "@")
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || !(x > 0 && x < 1) {
				return Rung{}, fmt.Errorf("rung %q: tpcs=%s: want the fraction of TPCs offline kernels keep, in (0, 1) (then @TASKS, /req)", s, v)
			}
			r.TPCs = x
			if hasN {
				m, err := strconv.Atoi(n)
				if err != nil || m < 1 || m > MaxTPCTasks {
					return Rung{}, fmt.Errorf("rung %q: tpcs=%s: want @N, the number of offline tasks masked (the first to connect), a whole number in 1..%d", s, v, MaxTPCTasks)
				}
				r.TPCTasks = m
			}
		default:
			return Rung{}, fmt.Errorf("rung %q: unknown part %q; want priority, guard=DURATION, hold, tpcs=FRACTION[@TASKS][/req] or suspend", s, part)
		}
	}
	return r, nil
}

// MaxTPCTasks is the most offline tasks a rung may name to mask
// (tpcs=F@N), more than a GPU instance serves.
const MaxTPCTasks = 1024

// Ladder is the rungs a controller climbs, cheapest first; rung 0 is
// where it starts.
type Ladder []Rung

// ParseLadder reads rungs from their text forms.
func ParseLadder(rungs []string) (Ladder, error) {
	if len(rungs) == 0 {
		return nil, fmt.Errorf("ladder: no rung")
	}
	l := make(Ladder, 0, len(rungs))
	for i, s := range rungs {
		r, err := ParseRung(s)
		if err != nil {
			return nil, fmt.Errorf("ladder rung %d: %w", i, err)
		}
		l = append(l, r)
	}
	return l, nil
}

// Check reports a ladder a controller cannot climb sensibly: a rung 0
// that restrains (the controller rests there, also with no online job
// to serve), or a rung that restrains no more than the one below it
// (a climb onto it would restrain less, or the same). Rungs that
// restrain in different ways (hold, then tpcs=0.5) may come in either
// order: the order is the user's order of cost.
func (l Ladder) Check() error {
	if len(l) == 0 {
		return fmt.Errorf("ladder: no rung")
	}
	if l[0] != (Rung{}) {
		return fmt.Errorf("rung 0 is %s: the first rung is where offline jobs run while no target needs more, so it restrains nothing (priority)", l[0])
	}
	for i := 1; i < len(l); i++ {
		if l[i-1].atLeast(l[i]) {
			return fmt.Errorf("rung %d (%s) restrains no more than rung %d (%s): each rung adds restraint (a smaller guard threshold, hold, fewer TPCs, more tasks masked, or suspend)", i, l[i], i-1, l[i-1])
		}
	}
	return nil
}

// atLeast reports whether r restrains offline work at least as much as q
// in every way: it suspends, or neither suspends and r holds launches at
// least as often (hold before guard, a smaller threshold before a
// larger) and masks at least as hard (a smaller share of TPCs on at
// least as many tasks).
func (r Rung) atLeast(q Rung) bool {
	switch {
	case r.Suspend:
		return true
	case q.Suspend:
		return false
	}
	return r.holdTau() <= q.holdTau() && r.masksAtLeast(q)
}

// holdTau is the block time above which the rung holds an offline
// launch during a request: 0 for hold, none (the largest) for no hold.
func (r Rung) holdTau() time.Duration {
	switch {
	case r.HoldAll:
		return 0
	case r.Guard:
		return r.Tau
	}
	return math.MaxInt64
}

// masksAtLeast reports whether r's mask keeps at most q's share of TPCs
// on at least as many tasks (no mask: all TPCs; no task count: all), at
// least as long (a mask during requests only is not one throughout).
func (r Rung) masksAtLeast(q Rung) bool {
	switch {
	case q.TPCs == 0:
		return true
	case r.TPCs == 0:
		return false
	}
	tasks := func(n int) int {
		if n == 0 {
			return math.MaxInt
		}
		return n
	}
	return r.TPCs <= q.TPCs && tasks(r.TPCTasks) >= tasks(q.TPCTasks) && (!r.PerRequest || q.PerRequest)
}

// Strings are the rungs' text forms.
func (l Ladder) Strings() []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.String()
	}
	return out
}

// UsesTPCs reports whether some rung masks TPCs.
func (l Ladder) UsesTPCs() bool {
	for _, r := range l {
		if r.TPCs > 0 {
			return true
		}
	}
	return false
}

// Alike reports, for each rung but the last, whether it restrains as
// the rung above it does where maskable offline tasks can be masked:
// "tpcs=0.75@1" and "tpcs=0.75" beside one trainer, or a rung given
// twice (while some task can mask; the kernel scheduler counts them only
// for a ladder with masks). A climb or a step down passes over such a
// rung rather than stop where nothing changes (Controller.SetAlike).
// With no task that can mask (maskable 0: none said so yet, or none can)
// nothing is taken as alike: hooks tell the server they can mask some
// time after they connect.
func (l Ladder) Alike(maskable int) []bool {
	out := make([]bool, max(len(l)-1, 0))
	for i := range out {
		out[i] = maskable > 0 && l[i].masking(maskable) == l[i+1].masking(maskable)
	}
	return out
}

// TPCsOf is how many TPCs a GPU or instance of sms SMs has: two SMs a
// TPC (Hopper, Ampere), at least one (the kernel scheduler's count, and
// the simulator's).
func TPCsOf(sms int) int { return max(sms/2, 1) }

// KeptTPCs is how many of tpcs TPCs a mask to share of them keeps:
// rounded, at least one (the kernel scheduler's keep count, and the
// simulator's).
func KeptTPCs(share float64, tpcs int) int { return max(int(share*float64(tpcs)+0.5), 1) }

// masking is the rung as it acts where maskable offline tasks can be
// masked: a count of tasks to mask at or above it masks them all (0).
func (r Rung) masking(maskable int) Rung {
	if r.TPCTasks >= maskable {
		r.TPCTasks = 0
	}
	return r
}

// DefaultLadder is mmk's default: priority alone, guard at 256 µs and
// 64 µs, every offline kernel held during requests, then the offline jobs
// suspended. TPC masks are off by default (an undocumented driver
// interface: docs/slo.md).
func DefaultLadder() Ladder {
	return Ladder{
		{},
		{Guard: true, Tau: 256 * time.Microsecond},
		{Guard: true, Tau: 64 * time.Microsecond},
		{HoldAll: true},
		{Suspend: true},
	}
}
