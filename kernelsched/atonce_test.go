package kernelsched

import (
	"testing"
	"time"
)

// TestReleasesAtOnce: a task the policy says goes at once has every launch
// released by the next Schedule, whatever else waits.
func TestReleasesAtOnce(t *testing.T) {
	tests := []struct {
		policy         string
		hiOnline       bool
		wantHi, wantLo bool
	}{
		{"fikit", false, true, false},
		{"mmk", true, true, false},
		{"mmk", false, false, false},
		{"fikit+mmk", false, true, false},
		{"exclusive", true, false, false},
		{"fifo", false, true, true},
		{"guard", true, true, true}, // free until the online job's latency says otherwise
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			s, err := New(tc.policy, Config{})
			if err != nil {
				t.Fatal(err)
			}
			hi, _ := s.AddTask(TaskSpec{Name: "hi", Priority: 0, Online: tc.hiOnline})
			lo, _ := s.AddTask(TaskSpec{Name: "lo", Priority: 5})
			th, _ := s.Task(hi)
			tl, _ := s.Task(lo)
			if got := s.ReleasesAtOnce(th); got != tc.wantHi {
				t.Errorf("hi: ReleasesAtOnce = %v, want %v", got, tc.wantHi)
			}
			if got := s.ReleasesAtOnce(tl); got != tc.wantLo {
				t.Errorf("lo: ReleasesAtOnce = %v, want %v", got, tc.wantLo)
			}
			if !tc.wantHi {
				return
			}
			k := KernelID{Name: "k", Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}
			for i := range 20 {
				now := time.Duration(i) * time.Microsecond
				if _, err := s.Arrive(now, Launch{Task: lo, Kernel: k}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Arrive(now, Launch{Task: hi, Kernel: k}); err != nil {
					t.Fatal(err)
				}
				s.Schedule(now)
				if th.Pending() != 0 {
					t.Fatalf("launch %d of hi still held", i)
				}
			}
		})
	}
}
