package kernelsched

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Kernels of the guard tests: "h" the online job's, "long" an offline
// kernel of one block (its block time is its duration), "short" an
// offline kernel of many waves of blocks (block time SK/10).
var (
	kShort = KernelID{Name: "short", Grid: Dim3{132 * 32 * 10, 1, 1}, Block: Dim3{32, 1, 1}}
	kLong  = kernelOf("long")
	kH     = kernelOf("h")
)

func guardProfile() *TaskProfile {
	p := &TaskProfile{Key: "g", Runs: 1, Kernels: []KernelStat{
		{ID: kH, Count: 1, SK: 20 * us, Gaps: 1},
		{ID: kLong, Count: 1, SK: 400 * us, Gaps: 1},
		{ID: kShort, Count: 1, SK: 100 * us, Gaps: 1},
	}}
	sortKernels(p.Kernels)
	return p
}

// guardRig drives guard with one online service (closed loop: a request,
// then a think time) and one offline task that always has a kernel to
// launch. Released offline kernels complete at their predicted ends.
type guardRig struct {
	t       *testing.T
	s       *Scheduler
	on, off TaskID
	prof    *TaskProfile
	now     time.Duration
	think   time.Duration
	offK    KernelID
	// latency returns a request's latency; held reports whether offline
	// work was kept off the GPU for the whole request.
	latency func(held bool) time.Duration
	// released offline predicted GPU time, and the sum of released work
	// while a request ran.
	offWork time.Duration
	probes  int
}

func newGuardRig(t *testing.T, cfg Config, offK KernelID) *guardRig {
	t.Helper()
	s, err := New("guard", cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &guardRig{t: t, s: s, prof: guardProfile(), think: 2 * time.Millisecond, offK: offK}
	r.on, err = s.AddTask(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: r.prof})
	if err != nil {
		t.Fatal(err)
	}
	r.off, err = s.AddTask(TaskSpec{Name: "off", Priority: 5, Profile: r.prof})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *guardRig) task(id TaskID) *Task {
	tk, err := r.s.Task(id)
	if err != nil {
		r.t.Fatal(err)
	}
	return tk
}

// advance moves time to `to`, completing offline kernels at their
// predicted ends and keeping one offline launch held or running.
func (r *guardRig) advance(to time.Duration) {
	r.t.Helper()
	off := r.task(r.off)
	for {
		if off.Pending() == 0 {
			if _, err := r.s.Arrive(r.now, Launch{Task: r.off, Kernel: r.offK, Est: r.prof.Estimate(r.offK)}); err != nil {
				r.t.Fatal(err)
			}
		}
		r.schedule()
		if len(off.out) == 0 {
			// Held: wait for the next event (the caller's) or a timer.
			_, wake := r.s.Schedule(r.now)
			if wake == Never || wake > to {
				break
			}
			r.now = wake
			continue
		}
		end := max(off.lastEnd, r.now)
		if end > to {
			break
		}
		r.now = end
		if err := r.s.Complete(r.now, r.off, off.out[0].seq); err != nil {
			r.t.Fatal(err)
		}
	}
	r.now = to
	r.schedule()
}

func (r *guardRig) schedule() {
	rel, _ := r.s.Schedule(r.now)
	for _, l := range rel {
		if l.Task == r.off {
			r.offWork += l.Est.SK
		}
	}
}

// request runs one online request and its think time.
func (r *guardRig) request() {
	r.t.Helper()
	off := r.task(r.off)
	if _, err := r.s.Arrive(r.now, Launch{Task: r.on, Kernel: kH, Est: r.prof.Estimate(kH)}); err != nil {
		r.t.Fatal(err)
	}
	r.schedule()
	before := r.offWork
	heldAtStart := len(off.out) == 0
	lat := r.latency(heldAtStart)
	r.advance(r.now + lat)
	held := heldAtStart && r.offWork == before
	if held {
		r.probes++
	}
	if err := r.s.Synced(r.now, r.on); err != nil {
		r.t.Fatal(err)
	}
	r.schedule()
	r.advance(r.now + r.think)
}

func (r *guardRig) stats() map[string]float64 { return r.s.PolicyStats() }

// requests runs n online requests from time 0, each one kernel "h", 1 ms
// long, then 2 ms of think time, and returns the time after the last.
func requests(b *bench, on TaskID, prof *TaskProfile, n int) time.Duration {
	b.t.Helper()
	now := time.Duration(0)
	for range n {
		if _, err := b.s.Arrive(now, Launch{Task: on, Kernel: kH, Est: prof.Estimate(kH)}); err != nil {
			b.t.Fatal(err)
		}
		b.schedule(now)
		now += time.Millisecond
		if err := b.s.Synced(now, on); err != nil {
			b.t.Fatal(err)
		}
		b.schedule(now)
		now += 2 * time.Millisecond
	}
	return now
}

// TestGuardAloneGoesAtOnce: without an online task every launch goes at
// once, and the hook need not wait (AtOnce).
func TestGuardAloneGoesAtOnce(t *testing.T) {
	b := newBench(t, "guard", Config{})
	prof := profileOf("p", map[string][2]time.Duration{"l": {500 * us, 0}})
	lo := b.task(TaskSpec{Name: "lo", Priority: 5, Profile: prof})
	tl, _ := b.s.Task(lo)
	if !b.s.ReleasesAtOnce(tl) {
		t.Error("offline task alone: ReleasesAtOnce = false")
	}
	for i := range 5 {
		if got := b.arrive(time.Duration(i)*us, "lo", "l"); len(got) != 1 {
			t.Fatalf("launch %d: released %v, want it at once", i, got)
		}
	}
}

// TestGuardAdapts is guard's feedback loop, tied to its description: it
// starts free (priority alone: offline launches go at once), probes the
// online request alone, holds long-block offline kernels during requests
// once the requests run slower than alone by more than the slack, and
// lets go again when they no longer do.
func TestGuardAdapts(t *testing.T) {
	const alone = 1 * time.Millisecond
	tests := []struct {
		name     string
		slowdown float64 // latency of a request with offline work on the GPU, over alone
		wantHold bool
	}{
		{"within slack", 1.02, false},
		{"slow", 1.5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newGuardRig(t, Config{}, kLong)
			r.latency = func(held bool) time.Duration {
				if held {
					return alone
				}
				return time.Duration(float64(alone) * tc.slowdown)
			}
			off := r.task(r.off)
			if !r.s.ReleasesAtOnce(off) {
				t.Fatal("guard does not start free")
			}
			for range 400 {
				r.request()
			}
			st := r.stats()
			if st["probes"] < 3 {
				t.Fatalf("%v probes after 400 requests, want at least 3 (stats %v)", st["probes"], st)
			}
			held := st["tau_us"] != -1
			if held != tc.wantHold {
				t.Fatalf("holding = %v (tau %v µs), want %v; stats %v", held, st["tau_us"], tc.wantHold, st)
			}
			if r.s.ReleasesAtOnce(off) == tc.wantHold && off.Pending() == 0 {
				t.Errorf("ReleasesAtOnce(offline) = %v while holding = %v", !tc.wantHold, tc.wantHold)
			}
			if !tc.wantHold {
				return
			}
			// Once latency is back to alone whatever runs, guard frees
			// the offline job again.
			r.latency = func(bool) time.Duration { return alone }
			for range 600 {
				r.request()
			}
			if st := r.stats(); st["tau_us"] != -1 {
				t.Errorf("after requests at alone latency tau = %v µs, want free (-1); stats %v", st["tau_us"], st)
			}
		})
	}
}

// TestGuardIgnoresNoise: requests whose latency scatters by ±10 % around
// alone, with or without the offline job, must not make guard hold it
// (on a real GPU the same request moves by that much between minutes).
func TestGuardIgnoresNoise(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		r := newGuardRig(t, Config{}, kLong)
		r.latency = func(bool) time.Duration {
			return time.Duration(float64(time.Millisecond) * (0.9 + 0.2*rng.Float64()))
		}
		for range 1000 {
			r.request()
		}
		if st := r.stats(); st["held_requests"] > 0.1*st["requests"] {
			t.Errorf("seed %d: guard held the offline job in %v of %v requests; stats %v", seed, st["held_requests"], st["requests"], st)
		}
	}
}

// TestGuardHoldsLongBlocksDuringRequests: with Tau fixed, an offline
// kernel whose block time exceeds it waits while a request runs; one of
// short blocks goes; the long one goes between requests if it ends before
// the next is due.
func TestGuardHoldsLongBlocksDuringRequests(t *testing.T) {
	tests := []struct {
		name       string
		k          KernelID
		tau        time.Duration
		wantDuring bool
	}{
		{"long blocks held", kLong, 50 * us, false},
		{"short blocks go", kShort, 50 * us, true},
		{"every kernel held", kShort, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, "guard", Config{Guard: GuardConfig{Tau: tc.tau}})
			prof := guardProfile()
			on := b.task(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: prof})
			off := b.task(TaskSpec{Name: "off", Priority: 5, Profile: prof})
			// Two requests to learn the think time (2 ms).
			now := requests(b, on, prof, 2)
			// A request runs; the offline kernel arrives in it.
			b.s.Arrive(now, Launch{Task: on, Kernel: kH, Est: prof.Estimate(kH)})
			b.schedule(now)
			b.s.Arrive(now+10*us, Launch{Task: off, Kernel: tc.k, Est: prof.Estimate(tc.k)})
			got := b.schedule(now + 10*us)
			if during := len(got) == 1; during != tc.wantDuring {
				t.Fatalf("released during the request: %v, want %v", got, tc.wantDuring)
			}
			if tc.wantDuring {
				return
			}
			// The request ends; the next is due 2 ms later: the held
			// kernel (400 or 100 µs) ends before that and goes.
			now += time.Millisecond
			if err := b.s.Synced(now, on); err != nil {
				t.Fatal(err)
			}
			if got := b.schedule(now); len(got) != 1 {
				t.Fatalf("released between requests: %v, want the held kernel", got)
			}
		})
	}
}

// TestGuardNothingLongRunsIntoTheNextRequest: between requests, a long
// offline kernel predicted to end after the next request is due waits.
func TestGuardNothingLongRunsIntoTheNextRequest(t *testing.T) {
	b := newBench(t, "guard", Config{Guard: GuardConfig{Tau: 50 * us}})
	prof := &TaskProfile{Key: "g", Runs: 1, Kernels: []KernelStat{
		{ID: kH, Count: 1, SK: 20 * us, Gaps: 1},
		{ID: kLong, Count: 1, SK: 3 * time.Millisecond, Gaps: 1},
	}}
	sortKernels(prof.Kernels)
	on := b.task(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: prof})
	off := b.task(TaskSpec{Name: "off", Priority: 5, Profile: prof})
	now := requests(b, on, prof, 3)
	now -= 2 * time.Millisecond // right after the last request
	b.s.Arrive(now, Launch{Task: off, Kernel: kLong, Est: prof.Estimate(kLong)})
	if got := b.schedule(now); len(got) != 0 {
		t.Fatalf("a 3 ms kernel went 2 ms before the next request: %v", got)
	}
}

// TestGuardFloor: an offline task held by an online task that never
// pauses still gets its floor share of time.
func TestGuardFloor(t *testing.T) {
	for _, floor := range []float64{0.1, 0.25, 0.5} {
		b := newBench(t, "guard", Config{Guard: GuardConfig{Tau: -1, Floor: floor}})
		prof := guardProfile()
		on := b.task(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: prof})
		off := b.task(TaskSpec{Name: "off", Priority: 5, Profile: prof})
		to, _ := b.s.Task(off)
		b.s.Arrive(0, Launch{Task: on, Kernel: kH, Est: prof.Estimate(kH)}) // a request that never ends
		var work time.Duration
		now := time.Duration(0)
		end := 200 * time.Millisecond
		for now < end {
			if to.Pending() == 0 {
				b.s.Arrive(now, Launch{Task: off, Kernel: kLong, Est: prof.Estimate(kLong)})
			}
			rel, wake := b.s.Schedule(now)
			for _, l := range rel {
				if l.Task != off {
					continue
				}
				work += l.Est.SK
				if err := b.s.Complete(now+l.Est.SK, off, l.Seq); err != nil {
					t.Fatal(err)
				}
			}
			if len(rel) > 0 {
				continue
			}
			if wake == Never {
				t.Fatalf("floor %v: offline held with no timer at %v", floor, now)
			}
			now = wake
		}
		share := float64(work) / float64(end)
		if share < floor*0.9 || share > floor*1.1+float64(400*us)/float64(end) {
			t.Errorf("floor %v: offline got %.3f of the time, want about %v", floor, share, floor)
		}
	}
}

// TestGuardInflightBound: while a request runs, offline work released and
// unfinished stays within Inflight (one kernel may always go).
func TestGuardInflightBound(t *testing.T) {
	b := newBench(t, "guard", Config{Guard: GuardConfig{Tau: time.Millisecond, Inflight: 250 * us}})
	prof := guardProfile()
	on := b.task(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: prof})
	off := b.task(TaskSpec{Name: "off", Priority: 5, Profile: prof})
	b.s.Arrive(0, Launch{Task: on, Kernel: kH, Est: prof.Estimate(kH)})
	b.schedule(0)
	for range 5 {
		b.s.Arrive(us, Launch{Task: off, Kernel: kShort, Est: prof.Estimate(kShort)})
	}
	if got := b.schedule(us); len(got) != 2 {
		t.Errorf("released %d short kernels of 100 µs under a 250 µs bound, want 2", len(got))
	}
	if n := b.s.PolicyStats()["bounded"]; n < 1 {
		t.Errorf("policy stats count %v decisions of the bound, want at least 1", n)
	}
}

// TestSetPolicy: a live switch keeps held launches, and the new policy
// decides them.
func TestSetPolicy(t *testing.T) {
	b := newBench(t, "exclusive", Config{})
	prof := profileOf("p", map[string][2]time.Duration{"h": {50 * us, 0}, "l": {500 * us, 0}})
	b.task(TaskSpec{Name: "hi", Priority: 0, Online: true, Profile: prof})
	lo := b.task(TaskSpec{Name: "lo", Priority: 5, Profile: prof})
	b.arrive(0, "hi", "h")
	if got := b.arrive(us, "lo", "l"); len(got) != 0 {
		t.Fatalf("exclusive released %v while hi holds the GPU", got)
	}
	if err := b.s.SetPolicy("nope", Config{}); err == nil {
		t.Fatal("SetPolicy took an unknown policy")
	}
	if err := b.s.SetPolicy("fifo", Config{}); err != nil {
		t.Fatal(err)
	}
	if got := b.schedule(2 * us); len(got) != 1 || got[0] != "l" {
		t.Fatalf("after the switch to fifo released %v, want [l]", got)
	}
	tl, _ := b.s.Task(lo)
	if !b.s.ReleasesAtOnce(tl) {
		t.Error("fifo: ReleasesAtOnce = false")
	}
	if got := b.s.Policy().Name(); got != "fifo" {
		t.Errorf("policy %q after the switch", got)
	}
}

// TestSynced: a synchronisation's return completes the task's released
// kernels and ends its run.
func TestSynced(t *testing.T) {
	b := newBench(t, "fifo", Config{})
	prof := profileOf("p", map[string][2]time.Duration{"a": {50 * us, 0}, "b": {50 * us, 0}})
	id := b.task(TaskSpec{Name: "x", Profile: prof})
	b.arrive(10*us, "x", "a")
	b.arrive(20*us, "x", "b")
	tk, _ := b.s.Task(id)
	if !tk.InRun() || tk.RunStart() != 10*us || tk.Outstanding() != 2 {
		t.Fatalf("in run %v from %v with %d outstanding, want true, 10µs, 2", tk.InRun(), tk.RunStart(), tk.Outstanding())
	}
	if err := b.s.Synced(30*us, id); err != nil {
		t.Fatal(err)
	}
	if tk.InRun() || tk.Outstanding() != 0 {
		t.Errorf("after Synced: in run %v, %d outstanding", tk.InRun(), tk.Outstanding())
	}
	b.arrive(40*us, "x", "a")
	if tk.RunStart() != 40*us {
		t.Errorf("next run starts at %v, want 40µs", tk.RunStart())
	}
	if err := b.s.Synced(0, 99); err == nil {
		t.Error("Synced took an unknown task")
	}
}

// TestBlockTime: a kernel's block time is its duration over its waves.
func TestBlockTime(t *testing.T) {
	tests := []struct {
		grid, bpsm, sms int
		want            time.Duration
	}{
		{1, 32, 132, 100 * us},
		{132 * 32, 32, 132, 100 * us},
		{132*32 + 1, 32, 132, 50 * us},
		{132 * 32 * 10, 32, 132, 10 * us},
		{132 * 32 * 10, 32, 66, 5 * us},
	}
	for _, tc := range tests {
		l := Launch{Kernel: KernelID{Name: "k", Grid: Dim3{uint32(tc.grid), 1, 1}, Block: Dim3{32, 1, 1}}, BlocksPerSM: tc.bpsm,
			Est: Estimate{SK: 100 * us, Known: true}}
		if got := l.BlockTime(tc.sms); got != tc.want {
			t.Errorf("grid %d, %d blocks/SM, %d SMs: %v, want %v", tc.grid, tc.bpsm, tc.sms, got, tc.want)
		}
	}
	if got := (&Launch{Kernel: kLong, BlocksPerSM: 32}).BlockTime(132); got != 0 {
		t.Errorf("unknown duration: %v, want 0", got)
	}
}

// TestGuardRetunedLive: switching guard to guard with another Tau keeps
// the think time it learnt and holds by the new Tau at once.
func TestGuardRetunedLive(t *testing.T) {
	b := newBench(t, "guard", Config{Guard: GuardConfig{Tau: 50 * us}})
	prof := guardProfile()
	on := b.task(TaskSpec{Name: "on", Priority: 0, Online: true, Profile: prof})
	off := b.task(TaskSpec{Name: "off", Priority: 5, Profile: prof})
	now := requests(b, on, prof, 2)
	before := b.s.Policy()
	// Short blocks (10 µs) go at Tau 50 µs, not at "hold every kernel".
	if err := b.s.SetPolicy("guard", Config{Guard: GuardConfig{Tau: -1}}); err != nil {
		t.Fatal(err)
	}
	if b.s.Policy() != before {
		t.Fatal("retuning guard replaced it")
	}
	if g := b.s.Policy().(*guard); g.services[on].think != 2*time.Millisecond {
		t.Errorf("think time %v after the retune, want the 2ms learnt", g.services[on].think)
	}
	b.s.Arrive(now, Launch{Task: on, Kernel: kH, Est: prof.Estimate(kH)})
	b.schedule(now)
	b.s.Arrive(now+10*us, Launch{Task: off, Kernel: kShort, Est: prof.Estimate(kShort)})
	if got := b.schedule(now + 10*us); len(got) != 0 {
		t.Fatalf("released during the request after the retune to hold all: %v", got)
	}
	// Another policy is a fresh one.
	if err := b.s.SetPolicy("fifo", Config{}); err != nil || b.s.Policy().Name() != "fifo" {
		t.Fatalf("%v %v", err, b.s.Policy().Name())
	}
}
