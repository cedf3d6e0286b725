package server

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TestRetpcFirstTasks: a rung's mask holds every offline task, or only
// the first tpcTasks of them to connect (by connection, not by id: ids
// are reused), never an online one; a task it no longer names is
// unmasked.
func TestRetpcFirstTasks(t *testing.T) {
	s, err := New(Config{Socket: "unused", Policy: "fifo", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// id: connection order; svc online. Task 0 connected last (a reused
	// id), so the first offline tasks to connect are a (seq 2), then b.
	tasks := []struct {
		id     kernelsched.TaskID
		name   string
		seq    uint64
		online bool
	}{{0, "late", 9, false}, {1, "svc", 1, true}, {2, "a", 2, false}, {3, "b", 5, false}}
	for _, tk := range tasks {
		sl, err := newSlot(tk.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sl.close)
		s.tasks[tk.id] = &task{id: tk.id, seq: tk.seq, hello: Hello{Name: tk.name, Online: tk.online}, slot: sl,
			names: map[uint32]string{}, local: map[uint32]string{}}
	}
	const keep = 33
	for _, tc := range []struct {
		name  string
		keep  uint32
		first uint32
		want  map[string]uint32
	}{
		{"every offline task", keep, 0, map[string]uint32{"late": keep, "svc": 0, "a": keep, "b": keep}},
		{"the first to connect", keep, 1, map[string]uint32{"late": 0, "svc": 0, "a": keep, "b": 0}},
		{"the first two", keep, 2, map[string]uint32{"late": 0, "svc": 0, "a": keep, "b": keep}},
		{"more than there are", keep, 5, map[string]uint32{"late": keep, "svc": 0, "a": keep, "b": keep}},
		{"no mask", 0, 1, map[string]uint32{"late": 0, "svc": 0, "a": 0, "b": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.tpcTasks.Store(tc.first)
			s.tpcKeep.Store(tc.keep)
			s.retpc()
			for _, tk := range s.tasks {
				if got := atomic.LoadUint32(tk.slot.u32(offTPCKeep)); got != tc.want[tk.hello.Name] || tk.tpcKeep != got {
					t.Errorf("%s: slot keeps %d TPCs (task says %d), want %d", tk.hello.Name, got, tk.tpcKeep, tc.want[tk.hello.Name])
				}
			}
		})
	}
}
