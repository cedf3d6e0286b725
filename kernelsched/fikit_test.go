package kernelsched

import (
	"slices"
	"testing"
	"time"
)

// The FIKIT paper's text was not at hand; these scenarios rebuild its
// figures from the rules the issue quotes, with durations in microseconds.

func fikitBench(t *testing.T, eps time.Duration) *bench {
	b := newBench(t, "fikit", Config{Epsilon: eps})
	b.task(TaskSpec{Name: "A", Priority: 0, Profile: profileOf("A", map[string][2]time.Duration{"Ak1": {10 * us, 30 * us}, "Ak2": {10 * us, 0}})})
	b.task(TaskSpec{Name: "B", Priority: 1, Profile: profileOf("B", map[string][2]time.Duration{"Bk1": {12 * us, 0}, "Bk2": {10 * us, 0}, "Bbig": {40 * us, 0}, "B25": {25 * us, 0}})})
	b.task(TaskSpec{Name: "C", Priority: 2, Profile: profileOf("C", map[string][2]time.Duration{"Ck1": {10 * us, 0}})})
	return b
}

func TestFIKITFigure8Order(t *testing.T) {
	b := fikitBench(t, 5*us)
	b.arrive(0, "A", "Ak1")    // A holds the GPU; a 30 us gap follows Ak1
	b.arrive(1*us, "B", "Bk1") // fills the gap: priority 1 first
	b.arrive(2*us, "C", "Ck1") // 18 us left after Bk1: Ck1 fits
	b.complete(10*us, "A", "Ak1")
	b.arrive(40*us, "A", "Ak2")
	if want := []string{"Ak1", "Bk1", "Ck1", "Ak2"}; !slices.Equal(b.released, want) {
		t.Fatalf("release order %v, want %v", b.released, want)
	}
}

func TestFIKITFigure11(t *testing.T) {
	tests := []struct {
		name   string
		steps  func(b *bench)
		want   []string
		reason string
	}{
		{
			name: "A: one kernel fills the gap",
			steps: func(b *bench) {
				b.arrive(0, "A", "Ak1")
				b.arrive(1*us, "B", "B25") // 25 of 30 us
				b.arrive(2*us, "C", "Ck1") // 5 us left: does not fit
			},
			want:   []string{"Ak1", "B25"},
			reason: "Ck1 (10 us) must wait: only 5 us of the gap remain",
		},
		{
			name: "B: several kernels fill the gap as they arrive",
			steps: func(b *bench) {
				b.arrive(0, "A", "Ak1")
				b.arrive(1*us, "B", "Bk1") // 12 us
				b.arrive(3*us, "B", "Bk2") // B's next launch: 10 us, 8 us left after it
				b.arrive(4*us, "C", "Ck1") // 10 us > 8 us left
			},
			want:   []string{"Ak1", "Bk1", "Bk2"},
			reason: "the gap takes Bk1 and Bk2; Ck1 no longer fits",
		},
		{
			name: "C: nothing fits, the low priority waits for the end of the run",
			steps: func(b *bench) {
				b.arrive(0, "A", "Ak1")
				b.arrive(1*us, "B", "Bbig") // 40 us > 30 us gap
				b.complete(10*us, "A", "Ak1")
				b.schedule(39 * us) // still inside A's gap
				b.arrive(40*us, "A", "Ak2")
				b.complete(50*us, "A", "Ak2") // A's run is over (no gap after Ak2)
			},
			want:   []string{"Ak1", "Ak2", "Bbig"},
			reason: "Bbig fits no gap and runs only once A is idle",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fikitBench(t, 5*us)
			tt.steps(b)
			if !slices.Equal(b.released, tt.want) {
				t.Fatalf("released %v, want %v: %s", b.released, tt.want, tt.reason)
			}
		})
	}
}

func TestFIKITFigure12EarlyStop(t *testing.T) {
	b := fikitBench(t, 5*us)
	b.arrive(0, "A", "Ak1")     // predicted gap 10..40 us
	b.arrive(1*us, "B", "Bk1")  // filled
	b.arrive(15*us, "A", "Ak2") // A is back early: the fill stops at once
	b.arrive(16*us, "C", "Ck1") // would have fit the predicted gap, must wait
	if want := []string{"Ak1", "Bk1", "Ak2"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}

func TestFIKITEpsilonSkipsShortGaps(t *testing.T) {
	b := fikitBench(t, 50*us) // the 30 us gap is below epsilon
	b.arrive(0, "A", "Ak1")
	b.arrive(1*us, "C", "Ck1")
	if want := []string{"Ak1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
	// Once A's predicted gap is over and A has not come back, C runs.
	b.complete(10*us, "A", "Ak1")
	if got := b.schedule(41 * us); !slices.Equal(got, []string{"Ck1"}) {
		t.Fatalf("after A went idle released %v, want [Ck1]", got)
	}
}

func TestBestPrioFitRules(t *testing.T) {
	prof := func(name string, sk time.Duration) *TaskProfile {
		return profileOf(name, map[string][2]time.Duration{name: {sk, 0}})
	}
	tests := []struct {
		name      string
		tasks     []TaskSpec
		remaining time.Duration
		want      string
	}{
		{"higher priority first even if a lower one fits better", []TaskSpec{
			{Name: "p1small", Priority: 1, Profile: prof("p1small", 5*us)},
			{Name: "p2exact", Priority: 2, Profile: prof("p2exact", 30*us)},
		}, 30 * us, "p1small"},
		{"longest fitting within a priority", []TaskSpec{
			{Name: "short", Priority: 1, Profile: prof("short", 5*us)},
			{Name: "long", Priority: 1, Profile: prof("long", 25*us)},
			{Name: "toolong", Priority: 1, Profile: prof("toolong", 31*us)},
		}, 30 * us, "long"},
		{"a priority where nothing fits is skipped", []TaskSpec{
			{Name: "p1big", Priority: 1, Profile: prof("p1big", 50*us)},
			{Name: "p3fit", Priority: 3, Profile: prof("p3fit", 20*us)},
		}, 30 * us, "p3fit"},
		{"kernels without a profile never fill", []TaskSpec{
			{Name: "unknown", Priority: 1},
		}, 30 * us, ""},
		{"ties go to the launch that came first", []TaskSpec{
			{Name: "first", Priority: 1, Profile: prof("first", 10*us)},
			{Name: "second", Priority: 1, Profile: prof("second", 10*us)},
		}, 30 * us, "first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, "fikit", Config{})
			for _, spec := range tt.tasks {
				id := b.task(spec)
				l := Launch{Task: id, Kernel: kernelOf(spec.Name), Est: spec.Profile.Estimate(kernelOf(spec.Name))}
				if _, err := b.s.Arrive(0, l); err != nil {
					t.Fatal(err)
				}
			}
			got := ""
			if task := BestPrioFit(b.s, 1, tt.remaining); task != nil {
				got = task.Spec.Name
			}
			if got != tt.want {
				t.Fatalf("BestPrioFit chose %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFIKITPreemptsAtKernelBoundary(t *testing.T) {
	b := newBench(t, "fikit", Config{Inflight: 1})
	b.task(TaskSpec{Name: "HP", Priority: 0, Profile: profileOf("HP", map[string][2]time.Duration{"h1": {10 * us, 0}})})
	b.task(TaskSpec{Name: "LP", Priority: 5, Profile: profileOf("LP", map[string][2]time.Duration{"l1": {100 * us, 0}, "l2": {100 * us, 0}})})
	b.arrive(0, "LP", "l1") // HP idle: LP holds the GPU
	b.arrive(1*us, "LP", "l2")
	if !slices.Equal(b.released, []string{"l1"}) {
		t.Fatalf("LP may keep one kernel in flight, released %v", b.released)
	}
	b.arrive(2*us, "HP", "h1") // HP arrives: released at once, LP's l2 stays held
	b.complete(100*us, "LP", "l1")
	if want := []string{"l1", "h1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
	b.complete(110*us, "HP", "h1")
	if want := []string{"l1", "h1", "l2"}; !slices.Equal(b.released, want) {
		t.Fatalf("after HP finished released %v, want %v", b.released, want)
	}
}

func TestFIKITEqualPrioritiesInterleaveFIFO(t *testing.T) {
	b := newBench(t, "fikit", Config{})
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n + "1": {10 * us, 0}, n + "2": {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "X", Priority: 0, Profile: p("X")})
	b.task(TaskSpec{Name: "Y", Priority: 0, Profile: p("Y")})
	b.arrive(0, "X", "X1")
	b.arrive(1*us, "Y", "Y1")
	b.arrive(2*us, "X", "X2")
	b.arrive(3*us, "Y", "Y2")
	if want := []string{"X1", "Y1", "X2", "Y2"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}
