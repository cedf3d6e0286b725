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

// TestQuiet: which tasks' launches each policy needs not (Scheduler.Quiet):
// fifo none; fikit and mmk none of a task alone, but both of two (one
// holds, the other's gaps or kernels decide it), until one is removed;
// policies that learn from every launch always need them.
func TestQuiet(t *testing.T) {
	tests := []struct {
		policy                string
		alone, hiPair, loPair bool
		hiAfterLoGone         bool
	}{
		{"fifo", true, true, true, true},
		{"fikit", true, false, false, true},
		{"mmk", true, false, false, true},
		{"fikit+mmk", true, false, false, true},
		{"guard", false, false, false, false},
		{"exclusive", false, false, false, false},
		{"hpf", false, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			s, err := New(tc.policy, Config{})
			if err != nil {
				t.Fatal(err)
			}
			hi, _ := s.AddTask(TaskSpec{Name: "hi", Priority: 0, Online: true})
			th, _ := s.Task(hi)
			if got := s.Quiet(th); got != tc.alone {
				t.Errorf("alone: Quiet = %v, want %v", got, tc.alone)
			}
			lo, _ := s.AddTask(TaskSpec{Name: "lo", Priority: 5})
			tl, _ := s.Task(lo)
			if got, got2 := s.Quiet(th), s.Quiet(tl); got != tc.hiPair || got2 != tc.loPair {
				t.Errorf("pair: Quiet = %v, %v, want %v, %v", got, got2, tc.hiPair, tc.loPair)
			}
			if err := s.RemoveTask(lo); err != nil {
				t.Fatal(err)
			}
			if got := s.Quiet(th); got != tc.hiAfterLoGone {
				t.Errorf("after lo left: Quiet = %v, want %v", got, tc.hiAfterLoGone)
			}
			if s.Quiet(tl) {
				t.Error("a removed task is quiet")
			}
			// A task alone that the policy holds is never quiet (mmk
			// holds an offline task; its launches wait for decisions).
			off, _ := s.AddTask(TaskSpec{Name: "off", Priority: 5})
			if err := s.RemoveTask(hi); err != nil {
				t.Fatal(err)
			}
			to, _ := s.Task(off)
			if s.Quiet(to) && !s.ReleasesAtOnce(to) {
				t.Error("a held task is quiet")
			}
		})
	}
}
