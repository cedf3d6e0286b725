package partitioner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// hitEstimator: a job's speed grows with its SMs to its saturation, and
// each co-runner of type T multiplies it by 1 - hit[T].
type hitEstimator struct {
	saturate map[string]float64
	hit      map[string]float64
}

func (e *hitEstimator) Speed(j Job, sms, gpuSMs, percent int, co []Share) (float64, error) {
	sat, ok := e.saturate[j.Type]
	if !ok {
		return 0, fmt.Errorf("no curve for %s", j.Type)
	}
	s := math.Min(1, float64(sms)*float64(percent)/100/sat)
	for _, c := range co {
		s *= 1 - e.hit[c.Job.Type]
	}
	return s, nil
}

// TestRelieve: a service that misses its target has the offline job
// that contends with it most moved to another GPU that takes it, one with
// no service first; none moves where no GPU has room, a pinned job never
// moves, and nothing moves for a service that holds its target. A job the
// caller cannot move, or that no GPU takes, gives way to the next.
func TestRelieve(t *testing.T) {
	m := a100(t).MIGDisabled()
	est := &hitEstimator{saturate: map[string]float64{"svc": 108, "heavy": 108, "light": 108, "big": 108},
		hit: map[string]float64{"heavy": 0.5, "light": 0.1, "svc": 0.2, "big": 0.3}}
	whole := func(jobs ...Placed) GPUPlan { return GPUPlan{Layout: layout(t, m, "7g.80gb"), Jobs: jobs} }
	svc := func(id string) Placed {
		return Placed{Job: Job{ID: id, Type: "svc", Online: true, MemoryMiB: 4000, Load: 0.3}, Percent: 100, Speed: 0.8}
	}
	off := func(id, typ string, mem int64) Placed {
		return Placed{Job: Job{ID: id, Type: typ, MemoryMiB: mem}, Percent: 100, Speed: 0.5}
	}
	pinned := off("heavy", "heavy", 8000)
	pinned.Job.Pin = &Pin{GPU: 0, Instance: 0}
	for _, tc := range []struct {
		name    string
		gpus    []GPUPlan
		missing []string
		// stuck are jobs the caller cannot move (dear to restart, moved
		// lately).
		stuck []string
		want  string // "JOB FROM->TO", or "" for no move
	}{
		{"the heavier trainer moves", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000), off("light", "light", 8000)), whole()}, []string{"s"}, nil, "heavy 0->1"},
		{"no room elsewhere", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000)), whole(off("big", "big", 78000))}, []string{"s"}, nil, ""},
		{"a pinned job stays", []GPUPlan{whole(svc("s"), pinned, off("light", "light", 8000)), whole()}, []string{"s"}, nil, "light 0->1"},
		{"a service that holds moves nothing", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000)), whole()}, nil, nil, ""},
		{"a GPU without services first", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000)), whole(svc("t")), whole()}, []string{"s"}, nil, "heavy 0->2"},
		{"next to a service if that is all", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000)), whole(svc("t"))}, []string{"s"}, nil, "heavy 0->1"},
		{"no offline job beside it", []GPUPlan{whole(svc("s")), whole()}, []string{"s"}, nil, ""},
		{"the heavier cannot move: the next does", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 8000), off("light", "light", 8000)), whole()}, []string{"s"}, []string{"heavy"}, "light 0->1"},
		{"the heavier fits nowhere: the next does", []GPUPlan{whole(svc("s"), off("heavy", "heavy", 60000), off("light", "light", 8000)), whole(off("big", "big", 60000))}, []string{"s"}, nil, "light 0->1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			movable := func(id string) bool { return !slices.Contains(tc.stuck, id) }
			moves, err := Relieve(Request{GPUs: tc.gpus}, est, Options{FixedMIG: true, FixOnlinePercent: true, PriorityShares: true, SLOGuard: true, Spread: true}, tc.missing, movable)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, mv := range moves {
				got = append(got, fmt.Sprintf("%s %d->%d", mv.Job, mv.From, mv.To))
				if mv.Why == "" || !strings.Contains(mv.Why, mv.Service) {
					t.Errorf("move %+v: no reason naming the service", mv)
				}
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Errorf("moves %q, want %q (%+v)", g, tc.want, moves)
			}
		})
	}
}

// TestAvoidIsHonoured: a pending job that avoids a GPU is placed on
// another, or waits (and stays in the plan's waiting list), even where
// the GPU it avoids would take it best.
func TestAvoidIsHonoured(t *testing.T) {
	m := a100(t).MIGDisabled()
	est := &hitEstimator{saturate: map[string]float64{"heavy": 108, "big": 108}, hit: map[string]float64{"heavy": 0.5, "big": 0.5}}
	whole := func(jobs ...Placed) GPUPlan { return GPUPlan{Layout: layout(t, m, "7g.80gb"), Jobs: jobs} }
	busy := Placed{Job: Job{ID: "b", Type: "big", MemoryMiB: 8000}, Percent: 100, Speed: 0.5}
	for _, tc := range []struct {
		name string
		gpus []GPUPlan
		want int // GPU, -1: waits
	}{
		{"placed on the other GPU, though busier", []GPUPlan{whole(), whole(busy)}, 1},
		{"waits where only the avoided GPU has room", []GPUPlan{whole(), whole(Placed{Job: Job{ID: "f", Type: "big", MemoryMiB: 80000}, Percent: 100, Speed: 1})}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{ID: "j", Type: "heavy", MemoryMiB: 8000, Avoid: []int{0}}
			plan, err := Decide(Request{GPUs: tc.gpus, Pending: []Job{j}}, est, Options{FixedMIG: true, PriorityShares: true, Spread: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := placedOn(plan, "j"); got != tc.want {
				t.Errorf("placed on GPU %d, want %d", got, tc.want)
			}
			if tc.want < 0 && (len(plan.Waiting) != 1 || plan.Waiting[0].ID != "j") {
				t.Errorf("waiting %+v, want j", plan.Waiting)
			}
		})
	}
}

// TestAvoidInLayoutSearch: a job that avoids GPU 0 may be placed on GPU
// 1 by the MIG layout search (which tries each layout as a list of one
// GPU, where the GPU's own index is 0).
func TestAvoidInLayoutSearch(t *testing.T) {
	m := a100(t)
	est := &hitEstimator{saturate: map[string]float64{"heavy": 14, "big": 14}, hit: map[string]float64{}}
	full := GPUPlan{Layout: layout(t, m, "7g.80gb"), Jobs: []Placed{{Job: Job{ID: "f", Type: "big", MemoryMiB: 80000}, Percent: 100, Speed: 1}}}
	empty := GPUPlan{Layout: Layout{Model: m}}
	j := Job{ID: "j", Type: "heavy", MemoryMiB: 8000, Avoid: []int{0}}
	plan, err := Decide(Request{GPUs: []GPUPlan{full, empty}, Pending: []Job{j}}, est, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := placedOn(plan, "j"); got != 1 {
		t.Errorf("placed on GPU %d, want 1 (by a new layout there); waiting %+v", got, plan.Waiting)
	}
}
