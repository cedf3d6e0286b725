package kernelsched

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecision measures one scheduling decision with 10 tasks of
// priorities 0-9 and 1,000 launches waiting: the priority-0 task's next
// launch arrives, the policy decides (release it, fill its gap, or hold
// it), and what it released completes. Released low-priority launches are
// replaced, so 1,000 stay waiting. Policies that release many launches at
// a time (fifo releases all 1,000) do more work per decision; released/op
// says how many.
func BenchmarkDecision(b *testing.B) {
	for _, policy := range Policies() {
		b.Run(policy, func(b *testing.B) {
			s, err := New(policy, Config{})
			if err != nil {
				b.Fatal(err)
			}
			const tasks, waiting = 10, 1000
			ids := make([]TaskID, tasks)
			ests := make([]Estimate, tasks)
			kernels := make([]KernelID, tasks)
			for i := range tasks {
				name := fmt.Sprintf("k%d", i)
				prof := profileOf(name, map[string][2]time.Duration{name: {time.Duration(5+i) * us, 20 * us}})
				ids[i], _ = s.AddTask(TaskSpec{Name: name, Priority: i, Online: i == 0, Profile: prof})
				kernels[i] = kernelOf(name)
				ests[i] = prof.Estimate(kernels[i])
			}
			now := time.Duration(0)
			arrive := func(i int) {
				if _, err := s.Arrive(now, Launch{Task: ids[i], Kernel: kernels[i], Est: ests[i]}); err != nil {
					b.Fatal(err)
				}
			}
			for j := range waiting {
				arrive(1 + j%(tasks-1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			released := 0
			for b.Loop() {
				now += 50 * time.Microsecond
				arrive(0)
				rel, _ := s.Schedule(now)
				released += len(rel)
				for _, l := range rel {
					if err := s.Complete(now, l.Task, l.Seq); err != nil {
						b.Fatal(err)
					}
					if l.Task != ids[0] {
						arrive(int(l.Task))
					}
				}
			}
			b.ReportMetric(float64(released)/float64(b.N), "released/op")
		})
	}
}
