package kernelsched

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMMKThreshold(t *testing.T) {
	tests := []struct {
		sk   time.Duration
		mps  int
		want time.Duration
	}{
		{100 * us, 100, 100 * us},
		{100 * us, 50, 200 * us},
		{30 * us, 10, 300 * us},
	}
	for _, tt := range tests {
		s, _ := New("mmk", Config{})
		id, _ := s.AddTask(TaskSpec{Name: "off", Priority: 5, MPSPercent: tt.mps})
		tk, _ := s.Task(id)
		l := Launch{Est: Estimate{SK: tt.sk, Known: true}}
		if got := Threshold(s, tk, &l); got != tt.want {
			t.Errorf("Thres(SK %v, MPS %d%%) = %v, want %v", tt.sk, tt.mps, got, tt.want)
		}
	}
}

// wide is a kernel that wants every SM of a 132-SM instance.
func wide(name string) KernelID {
	return KernelID{Name: name, Grid: Dim3{132 * 8, 1, 1}, Block: Dim3{256, 1, 1}}
}

func TestMMKOfflineWaitsUntilThresholdOfOnlineWork(t *testing.T) {
	s, _ := New("mmk", Config{})
	on, _ := s.AddTask(TaskSpec{Name: "on", Priority: 0, Online: true})
	off, _ := s.AddTask(TaskSpec{Name: "off", Priority: 5, MPSPercent: 50})
	// online launches an 80 us online kernel that wants every SM and
	// returns the tasks released by that decision.
	online := func(now time.Duration) []TaskID {
		if _, err := s.Arrive(now, Launch{Task: on, Kernel: wide("o"), Est: Estimate{SK: 80 * us, Known: true}}); err != nil {
			t.Fatal(err)
		}
		rel, _ := s.Schedule(now)
		var ids []TaskID
		for _, l := range rel {
			ids = append(ids, l.Task)
		}
		return ids
	}
	online(0)
	// The offline kernel (SK 100 us, MPS 50 %: Thres 200 us) does not fit.
	if _, err := s.Arrive(1*us, Launch{Task: off, Kernel: wide("x"), Est: Estimate{SK: 100 * us, Known: true}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		now  time.Duration
		want []TaskID
	}{
		{2 * us, []TaskID{on}},      // 80 us of online work waited
		{3 * us, []TaskID{on}},      // 160 us
		{5 * us, []TaskID{on, off}}, // 240 us >= 200 us: it goes though it does not fit
	}
	for _, st := range steps {
		if got := online(st.now); !slices.Equal(got, st.want) {
			t.Fatalf("at %v released tasks %v, want %v", st.now, got, st.want)
		}
	}
}

func TestMMKOnlineContentionStopsOffline(t *testing.T) {
	s, _ := New("mmk", Config{})
	on, _ := s.AddTask(TaskSpec{Name: "on", Priority: 0, Online: true})
	off1, _ := s.AddTask(TaskSpec{Name: "off1", Priority: 5})
	off2, _ := s.AddTask(TaskSpec{Name: "off2", Priority: 5})
	// off1 takes 100 of the 132 SMs; a wide online kernel then fails the check.
	hundred := KernelID{Name: "a", Grid: Dim3{800, 1, 1}, Block: Dim3{256, 1, 1}}
	s.Arrive(0, Launch{Task: off1, Kernel: hundred, Est: Estimate{SK: 50 * us, Known: true}})
	s.Schedule(0)
	onSeq, _ := s.Arrive(1*us, Launch{Task: on, Kernel: wide("o"), Est: Estimate{SK: 10 * us, Known: true}})
	if rel, _ := s.Schedule(1 * us); len(rel) != 1 || rel[0].Task != on {
		t.Fatalf("online kernel not launched: %v", rel)
	}
	// A small offline kernel would fit beside off1 by SMs alone, but the
	// contended online kernel stops offline launches until it completes.
	small := KernelID{Name: "s", Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}
	s.Arrive(2*us, Launch{Task: off2, Kernel: small, Est: Estimate{SK: 1000 * us, Known: true}})
	if rel, _ := s.Schedule(2 * us); len(rel) != 0 {
		t.Fatalf("offline launched while an online kernel is contended: %v", rel)
	}
	if err := s.Complete(20*us, on, onSeq); err != nil {
		t.Fatal(err)
	}
	if rel, _ := s.Schedule(20 * us); len(rel) != 1 || rel[0].Task != off2 {
		t.Fatalf("after the online kernel completed released %v, want off2", rel)
	}
}

func TestHPFDecisionWithOverhead(t *testing.T) {
	task := func(prio int, remaining time.Duration) *Task {
		// A profile of 100 kernels whose run takes `remaining`, at position 0.
		return &Task{Spec: TaskSpec{Priority: prio, Profile: &TaskProfile{RunKernels: 100, RunSpan: remaining}}}
	}
	tests := []struct {
		name      string
		cur, next *Task
		want      bool
	}{
		{"no holder", nil, task(5, time.Second), true},
		{"higher priority takes over", task(5, 10*us), task(1, time.Second), true},
		{"lower priority never", task(1, time.Second), task(5, 1*us), false},
		{"shorter by more than the overhead", task(3, 500*us), task(3, 400*us), true},
		{"shorter by less than the overhead", task(3, 500*us), task(3, 460*us), false},
		{"longer", task(3, 500*us), task(3, 600*us), false},
	}
	for _, tt := range tests {
		if got := HPFSwitch(tt.cur, tt.next, 50*us); got != tt.want {
			t.Errorf("%s: HPFSwitch = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHPFRemainingFollowsPosition(t *testing.T) {
	tk := &Task{Spec: TaskSpec{Profile: &TaskProfile{RunKernels: 4, RunSpan: 400 * us}}}
	want := []time.Duration{400 * us, 300 * us, 200 * us, 100 * us, 400 * us}
	for i, w := range want {
		tk.position = i
		if got := tk.Remaining(); got != w {
			t.Errorf("after %d kernels Remaining = %v, want %v", i, got, w)
		}
	}
}

func TestFFSEpochUnit(t *testing.T) {
	s, _ := New("ffs", Config{SwitchOverhead: 50 * us, MaxSwitchOverhead: 0.05})
	a, _ := s.AddTask(TaskSpec{Name: "a", Priority: 0}) // weight 10
	b, _ := s.AddTask(TaskSpec{Name: "b", Priority: 5}) // weight 5
	if got, want := FFSUnit(s), 200*us; got != want {
		t.Fatalf("T = %v, want %v (50 us / (5 %% x weight 5))", got, want)
	}
	ta, _ := s.Task(a)
	tb, _ := s.Task(b)
	if ea, eb := epoch(s, ta), epoch(s, tb); ea != 2*time.Millisecond || eb != time.Millisecond {
		t.Fatalf("epochs %v, %v, want 2ms and 1ms", ea, eb)
	}
}

func TestFFSRotatesByEpoch(t *testing.T) {
	b := newBench(t, "ffs", Config{SwitchOverhead: 50 * us, MaxSwitchOverhead: 0.05, Inflight: 1})
	// A task's first kernel is followed by a 20 us gap: it stays active.
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n + "1": {10 * us, 20 * us}, n + "2": {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "X", Priority: 5, Profile: p("X")}) // weight 5: epoch 1 ms
	b.task(TaskSpec{Name: "Y", Priority: 5, Profile: p("Y")})
	b.arrive(0, "X", "X1")
	b.arrive(1*us, "Y", "Y1")
	b.complete(10*us, "X", "X1")
	b.arrive(11*us, "X", "X2") // X's epoch runs until 1 ms
	if want := []string{"X1", "X2"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
	b.complete(21*us, "X", "X2")
	b.schedule(time.Millisecond) // X's epoch is over: Y's turn
	if want := []string{"X1", "X2", "Y1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}

func TestDPRRAgeingAndQuota(t *testing.T) {
	s, _ := New("dprr", Config{AgeStep: time.Millisecond, AgeCap: 20})
	id, _ := s.AddTask(TaskSpec{Name: "t", Priority: 4}) // static level 5
	tk, _ := s.Task(id)
	tests := []struct {
		waited time.Duration
		level  int
		quota  time.Duration
	}{
		{0, 5, 3 * time.Millisecond},
		{999 * us, 5, 3 * time.Millisecond},
		{3 * time.Millisecond, 8, 4500 * us},
		{20 * time.Millisecond, 25, 13 * time.Millisecond},
		{time.Second, 25, 13 * time.Millisecond}, // capped at +20
	}
	for _, tt := range tests {
		lv := DPRRLevel(s, tk, 0, tt.waited)
		if lv != tt.level || DPRRQuota(lv) != tt.quota {
			t.Errorf("waited %v: level %d quota %v, want %d and %v", tt.waited, lv, DPRRQuota(lv), tt.level, tt.quota)
		}
	}
}

func TestDPRRQuotaMovesHolderToInactive(t *testing.T) {
	b := newBench(t, "dprr", Config{Inflight: 1})
	// A task's first kernel is followed by a 20 us gap: it stays active.
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n + "1": {10 * us, 20 * us}, n + "2": {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "X", Priority: 9, Profile: p("X")}) // level 0: quota 0.5 ms
	b.task(TaskSpec{Name: "Y", Priority: 9, Profile: p("Y")})
	b.arrive(0, "X", "X1")
	b.arrive(1*us, "Y", "Y1")
	b.complete(10*us, "X", "X1")
	b.arrive(20*us, "X", "X2")
	if want := []string{"X1", "X2"}; !slices.Equal(b.released, want) {
		t.Fatalf("within X's quota released %v, want %v", b.released, want)
	}
	b.complete(30*us, "X", "X2")
	b.schedule(500 * us) // quota over: X goes inactive, Y (aged) runs
	if want := []string{"X1", "X2", "Y1"}; !slices.Equal(b.released, want) {
		t.Fatalf("after X's quota released %v, want %v", b.released, want)
	}
}

func TestPIVEvictsForHigherPriorityOnly(t *testing.T) {
	b := newBench(t, "piv", Config{Inflight: 1})
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n + "1": {10 * us, 20 * us}, n + "2": {10 * us, 20 * us}, n + "3": {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "L", Priority: 5, Profile: p("L")})
	b.task(TaskSpec{Name: "M", Priority: 5, Profile: p("M")})
	b.task(TaskSpec{Name: "H", Priority: 1, Profile: p("H")})
	b.arrive(0, "L", "L1")
	b.arrive(1*us, "M", "M1") // equal priority: waits for L
	b.arrive(2*us, "L", "L2") // held: L keeps one kernel in flight
	if want := []string{"L1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
	if got := b.arrive(3*us, "H", "H1"); !slices.Equal(got, []string{"H1"}) {
		t.Fatalf("H's arrival released %v, want [H1]: it evicts L at once", got)
	}
	b.complete(10*us, "L", "L1") // L1 ends; L2 stays held while H holds the GPU
	b.complete(13*us, "H", "H1")
	b.arrive(14*us, "H", "H2")
	if want := []string{"L1", "H1", "H2"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}

func TestHPFShortestRemainingWithinAPriority(t *testing.T) {
	long := &TaskProfile{Key: "long", Runs: 1, RunKernels: 2, RunSpan: 1000 * us,
		Kernels: []KernelStat{{ID: kernelOf("a1"), Count: 1, SK: 10 * us, Gaps: 1, SG: 20 * us, SGMax: 20 * us}, {ID: kernelOf("a2"), Count: 1, SK: 10 * us}}}
	short := &TaskProfile{Key: "short", Runs: 1, RunKernels: 1, RunSpan: 100 * us,
		Kernels: []KernelStat{{ID: kernelOf("b1"), Count: 1, SK: 10 * us}}}
	sortKernels(long.Kernels)
	for _, tt := range []struct {
		overhead time.Duration
		want     []string
	}{
		{50 * us, []string{"a1", "b1", "a2"}},   // 1000 us left > 100 us + 50 us: B goes first
		{2000 * us, []string{"a1", "a2", "b1"}}, // the switch costs more than it saves
	} {
		b := newBench(t, "hpf", Config{Inflight: 1, SwitchOverhead: tt.overhead})
		b.task(TaskSpec{Name: "A", Priority: 3, Profile: long})
		b.task(TaskSpec{Name: "B", Priority: 3, Profile: short})
		b.arrive(0, "A", "a1")
		b.arrive(1*us, "B", "b1")
		b.arrive(2*us, "A", "a2")
		b.complete(10*us, "A", "a1")
		b.drain(20 * us)
		b.drain(30 * us)
		if !slices.Equal(b.released, tt.want) {
			t.Errorf("overhead %v: released %v, want %v", tt.overhead, b.released, tt.want)
		}
	}
}

func TestHPFRunPositionRestartsAfterIdle(t *testing.T) {
	prof := &TaskProfile{Key: "r", Runs: 1, RunKernels: 4, RunSpan: 400 * us, Kernels: []KernelStat{{ID: kernelOf("k"), Count: 4, SK: 10 * us, NextLaunchMax: 5 * us}}}
	b := newBench(t, "hpf", Config{})
	b.task(TaskSpec{Name: "R", Priority: 1, Profile: prof})
	for i := range 3 {
		b.arrive(time.Duration(i)*us, "R", "k")
		b.complete(time.Duration(i)*us+us/2, "R", "k")
	}
	tk, _ := b.s.Task(b.tasks["R"])
	if got := tk.Remaining(); got != 100*us {
		t.Fatalf("after 3 of 4 kernels Remaining = %v, want 100us", got)
	}
	b.arrive(time.Second, "R", "k") // a new run after a second idle
	if got := tk.Remaining(); got != 300*us {
		t.Fatalf("one kernel into a new run Remaining = %v, want 300us", got)
	}
}

func TestHolderWaitsForTheLaunchWindow(t *testing.T) {
	// H's kernel ends at 10 us and its profile saw no GPU gap after it,
	// but up to 200 us between its launch call and the next: H stays in
	// its run until then, and a lower priority gets the GPU only after.
	prof := &TaskProfile{Key: "h", Runs: 1, Kernels: []KernelStat{{ID: kernelOf("h1"), Count: 1, SK: 10 * us, NextLaunchMax: 200 * us}}}
	for _, policy := range []string{"fikit", "hpf", "piv"} {
		b := newBench(t, policy, Config{})
		b.task(TaskSpec{Name: "H", Priority: 0, Profile: prof})
		b.task(TaskSpec{Name: "L", Priority: 5, Profile: profileOf("L", map[string][2]time.Duration{"l1": {500 * us, 0}})})
		b.arrive(0, "H", "h1")
		b.complete(10*us, "H", "h1")
		b.arrive(11*us, "L", "l1")
		_, wake := b.s.Schedule(11 * us)
		if wake != 200*us {
			t.Fatalf("%s: wake %v, want 200us (the end of H's launch window)", policy, wake)
		}
		if got := b.schedule(wake); !slices.Equal(got, []string{"l1"}) {
			t.Fatalf("%s: at the end of H's window released %v, want [l1]", policy, got)
		}
	}
}

func TestFFSTurnsPassTheIdleTasks(t *testing.T) {
	b := newBench(t, "ffs", Config{SwitchOverhead: 50 * us, MaxSwitchOverhead: 0.05, Inflight: 1})
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n: {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "A", Priority: 5, Profile: p("a")}) // epoch 1 ms each
	b.task(TaskSpec{Name: "B", Priority: 5, Profile: p("b")})
	b.task(TaskSpec{Name: "C", Priority: 5, Profile: p("c")})
	now := time.Duration(0)
	// A and C always have work; B has one launch now and then and goes
	// idle after it. Every task must get turns.
	for i := range 40 {
		for _, name := range []string{"A", "C"} {
			if tk, _ := b.s.Task(b.tasks[name]); tk.Pending() == 0 {
				b.arrive(now, name, strings.ToLower(name))
			}
		}
		if tk, _ := b.s.Task(b.tasks["B"]); i%4 == 0 && tk.Pending() == 0 {
			b.arrive(now, "B", "b")
		}
		now += 300 * us
		b.drain(now)
	}
	for _, n := range []string{"a", "b", "c"} {
		if !slices.Contains(b.released, n) {
			t.Errorf("task %s never got a turn: released %v", n, b.released)
		}
	}
}

func TestMMKRemovedOnlineTaskReleasesOffline(t *testing.T) {
	s, _ := New("mmk", Config{})
	on, _ := s.AddTask(TaskSpec{Name: "on", Priority: 0, Online: true})
	off1, _ := s.AddTask(TaskSpec{Name: "off1", Priority: 5})
	off2, _ := s.AddTask(TaskSpec{Name: "off2", Priority: 5})
	s.Arrive(0, Launch{Task: off1, Kernel: wide("a"), Est: Estimate{SK: 50 * us, Known: true}})
	s.Schedule(0)
	s.Arrive(1*us, Launch{Task: on, Kernel: wide("o"), Est: Estimate{SK: 10 * us, Known: true}}) // contended
	s.Schedule(1 * us)
	if err := s.RemoveTask(on); err != nil { // the online process died with its kernel out
		t.Fatal(err)
	}
	s.Arrive(2*us, Launch{Task: off2, Kernel: kernelOf("b"), Est: Estimate{SK: 10 * us, Known: true}})
	tk, _ := s.Task(off1)
	s.Complete(3*us, off1, tk.out[0].seq)
	if rel, _ := s.Schedule(3 * us); len(rel) != 1 || rel[0].Task != off2 {
		t.Fatalf("after the online task was removed released %v, want off2's launch", rel)
	}
}

func TestFIFOReleasesEverything(t *testing.T) {
	b := newBench(t, "fifo", Config{})
	b.task(TaskSpec{Name: "A", Priority: 9})
	b.task(TaskSpec{Name: "B", Priority: 0})
	b.arrive(0, "A", "a1")
	b.arrive(0, "A", "a2")
	b.arrive(1*us, "B", "b1")
	if want := []string{"a1", "a2", "b1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}

func TestExclusiveOneTaskAtATime(t *testing.T) {
	b := newBench(t, "exclusive", Config{Quantum: time.Millisecond})
	b.task(TaskSpec{Name: "A", Priority: 5})
	b.task(TaskSpec{Name: "B", Priority: 0})
	b.arrive(0, "A", "a1")
	b.arrive(1*us, "B", "b1") // A holds the GPU, whatever B's priority
	b.arrive(2*us, "A", "a2")
	b.complete(10*us, "A", "a1")
	if want := []string{"a1", "a2"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
	b.complete(20*us, "A", "a2") // A idle: B's turn
	if want := []string{"a1", "a2", "b1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
	}
}
