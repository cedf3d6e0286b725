package kernelsched

import (
	"testing"
	"time"
)

// TestTaskChurnLeavesNothing: tasks that come and go (a job's processes
// reconnecting, 20,000 times) leave nothing behind in the scheduler or
// its policy: the tasks it walks at each decision are the live ones and
// the slots of departed ones are reused, whatever the policy. A task
// that stays keeps its launches released in order across the churn.
func TestTaskChurnLeavesNothing(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s, err := New(policy, Config{})
			if err != nil {
				t.Fatal(err)
			}
			stay, err := s.AddTask(TaskSpec{Name: "stays", Priority: 0, Online: true})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Duration(0)
			for i := range 20000 {
				id, err := s.AddTask(TaskSpec{Name: "comes-and-goes", Priority: 5})
				if err != nil {
					t.Fatal(err)
				}
				if i%100 == 0 {
					now += time.Millisecond
					if _, err := s.Arrive(now, Launch{Task: id, Kernel: kernelOf("k")}); err != nil {
						t.Fatal(err)
					}
					s.Schedule(now)
				}
				if err := s.RemoveTask(id); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(s.Tasks()); n > 2 {
				t.Errorf("after 20,000 tasks came and went the scheduler walks %d task slots, want at most 2", n)
			}
			now += time.Millisecond
			seq, err := s.Arrive(now, Launch{Task: stay, Kernel: kernelOf("k")})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := s.Schedule(now + time.Second)
			if len(out) != 1 || out[0].Seq != seq || out[0].Task != stay {
				t.Errorf("the task that stayed: released %+v, want its launch %d", out, seq)
			}
		})
	}
}
