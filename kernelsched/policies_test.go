package kernelsched

import (
	"slices"
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
	// A task's first kernel is followed by a 20 us gap: it stays active.
	p := func(n string) *TaskProfile {
		return profileOf(n, map[string][2]time.Duration{n + "1": {10 * us, 20 * us}, n + "2": {10 * us, 0}})
	}
	b.task(TaskSpec{Name: "L", Priority: 5, Profile: p("L")})
	b.task(TaskSpec{Name: "M", Priority: 5, Profile: p("M")})
	b.task(TaskSpec{Name: "H", Priority: 1, Profile: p("H")})
	b.arrive(0, "L", "L1")
	b.arrive(1*us, "M", "M1") // equal priority: waits for L
	b.complete(10*us, "L", "L1")
	b.arrive(11*us, "L", "L2")
	b.arrive(12*us, "H", "H1") // higher: L is evicted, L2 released only after H
	b.complete(20*us, "L", "L2")
	if want := []string{"L1", "L2", "H1"}; !slices.Equal(b.released, want) {
		t.Fatalf("released %v, want %v", b.released, want)
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
