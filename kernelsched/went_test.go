package kernelsched

import (
	"testing"
	"time"
)

// TestWent: a launch the hook let go without a decision (fail-open) is
// booked as released at once, whatever the policy would decide: it is
// outstanding, never queued, never released a second time, and Complete
// takes it back. The task's held launches behind it are not delayed by it.
func TestWent(t *testing.T) {
	for _, policy := range []string{"fikit", "mmk", "fikit+mmk", "hpf"} {
		t.Run(policy, func(t *testing.T) {
			b := newBench(t, policy, Config{})
			prof := profileOf("p", map[string][2]time.Duration{"h": {50 * us, 0}, "l": {500 * us, 0}})
			b.task(TaskSpec{Name: "hi", Priority: 0, Online: true, Profile: prof})
			lo := b.task(TaskSpec{Name: "lo", Priority: 5, Profile: prof})
			b.arrive(0, "hi", "h") // hi holds the GPU
			tl, _ := b.s.Task(lo)
			seq, err := b.s.Went(10*us, Launch{Task: lo, Kernel: kernelOf("l"), Est: prof.Estimate(kernelOf("l"))})
			if err != nil {
				t.Fatal(err)
			}
			if tl.Pending() != 0 || tl.Outstanding() != 1 {
				t.Fatalf("after Went: %d held, %d outstanding; want 0 and 1", tl.Pending(), tl.Outstanding())
			}
			if got := b.schedule(10 * us); len(got) != 0 {
				t.Errorf("Schedule released %v after Went; want nothing (it already went)", got)
			}
			if err := b.s.Complete(600*us, lo, seq); err != nil {
				t.Errorf("Complete of the launch that went: %v", err)
			}
			if tl.Outstanding() != 0 {
				t.Errorf("%d outstanding after Complete, want 0", tl.Outstanding())
			}
			if _, err := b.s.Went(0, Launch{Task: lo, Kernel: KernelID{Name: "zero", Grid: Dim3{0, 1, 1}, Block: Dim3{1, 1, 1}}}); err == nil {
				t.Error("Went took a launch with a zero grid dimension")
			}
			if _, err := b.s.Went(0, Launch{Task: 99, Kernel: kernelOf("l")}); err == nil {
				t.Error("Went took a launch of an unknown task")
			}
		})
	}
}
