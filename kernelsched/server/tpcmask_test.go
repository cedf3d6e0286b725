package server

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TestRetpcFirstTasks: a rung's mask holds every offline task, or only
// the first n of them to connect whose hooks can mask (by connection,
// not by id: ids are reused; a hook without MMK_TPC_MASK=1 says nothing,
// one that cannot says TPCNone), never an online one; a task it no
// longer names is unmasked.
func TestRetpcFirstTasks(t *testing.T) {
	s, err := New(Config{Socket: "unused", Policy: "fifo", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Connection order (seq): svc, plain, a, none, b, late (task 0: a
	// reused id). plain's hook does not mask, none's cannot; a has masked
	// already, b and late are ready.
	tasks := []struct {
		id     kernelsched.TaskID
		name   string
		seq    uint64
		online bool
		state  uint32
	}{
		{0, "late", 9, false, TPCReady}, {1, "svc", 1, true, 0}, {2, "a", 3, false, TPCMasking},
		{3, "b", 5, false, TPCReady}, {4, "plain", 2, false, 0}, {5, "none", 4, false, TPCNone},
	}
	for _, tk := range tasks {
		sl, err := newSlot(tk.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sl.close)
		atomic.StoreUint32(sl.u32(offTPCState), tk.state)
		s.tasks[tk.id] = &task{id: tk.id, seq: tk.seq, hello: Hello{Name: tk.name, Online: tk.online}, slot: sl,
			names: map[uint32]string{}, local: map[uint32]string{}}
	}
	// a, b and late can mask; svc is online, plain's hook says nothing,
	// none's cannot.
	if got := s.maskable(); got != 3 {
		t.Errorf("maskable: %d offline tasks, want 3", got)
	}
	const keep = 33
	every := map[string]uint32{"late": keep, "svc": 0, "a": keep, "b": keep, "plain": keep, "none": keep}
	for _, tc := range []struct {
		name        string
		keep, first int
		want        map[string]uint32
	}{
		{"every offline task", keep, 0, every},
		{"the first to connect that can mask", keep, 1, map[string]uint32{"a": keep}},
		{"the first two", keep, 2, map[string]uint32{"a": keep, "b": keep}},
		{"more than can mask", keep, 5, map[string]uint32{"late": keep, "a": keep, "b": keep}},
		{"no mask", 0, 1, nil},
		{"every one again", keep, 0, every},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.setTPCMask(tc.keep, tc.first)
			s.retpc()
			for _, tk := range s.tasks {
				if got := atomic.LoadUint32(tk.slot.u32(offTPCKeep)); got != tc.want[tk.hello.Name] || tk.tpcKeep != got {
					t.Errorf("%s: slot keeps %d TPCs (task says %d), want %d", tk.hello.Name, got, tk.tpcKeep, tc.want[tk.hello.Name])
				}
			}
			if tc.first == 0 && len(s.tpcFirst) > 0 {
				t.Errorf("%d tasks still kept as the first to connect", len(s.tpcFirst))
			}
		})
	}
}
