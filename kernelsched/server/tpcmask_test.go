package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
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

// TestHookFixedMasks: without a kernel scheduler the hook masks every
// kernel as MMK_TPC_KEEP (TPCs 0..N-1 kept) or MMK_TPC_OFF (exactly the
// TPCs listed off; it wins over KEEP) say, for measuring masks; the fake
// GPU runs a kernel on the TPCs of its 66 left on, of 72 mask slots with
// six holes below slot 64 (as an H100's slots 64-71 are TPCs). A kept
// count masks every slot from it to 71, never the bits past them
// (MMK_TPC_SLOTS sets the count), which cost on an H100 without taking a
// TPC, and no kernel at all where it keeps every slot; an exact list does
// as it says. A bad list or slot count is ignored.
func TestHookFixedMasks(t *testing.T) {
	a := buildC(t)
	for _, tc := range []struct {
		name   string
		env    []string
		masked bool
		keep   uint32
		past   bool
	}{
		{"keep 33: slots 0-32, three of them holes", []string{"MMK_TPC_KEEP=33"}, true, 30, false},
		{"keep 70: slots 70-71 off, no bit past them", []string{"MMK_TPC_KEEP=70"}, true, 64, false},
		{"keep 72: every slot, no mask", []string{"MMK_TPC_KEEP=72"}, false, 0, false},
		{"keep 33 of 128 slots", []string{"MMK_TPC_KEEP=33", "MMK_TPC_SLOTS=128"}, true, 30, true},
		{"keep 70 of 66 slots: none off", []string{"MMK_TPC_KEEP=70", "MMK_TPC_SLOTS=66"}, false, 0, false},
		{"a bad slot count", []string{"MMK_TPC_KEEP=33", "MMK_TPC_SLOTS=129"}, true, 30, false},
		{"off 0-7 and 65", []string{"MMK_TPC_OFF=0-7,65"}, true, 57, false},
		{"off wins over keep", []string{"MMK_TPC_KEEP=33", "MMK_TPC_OFF=64"}, true, 65, false},
		{"off past the slots", []string{"MMK_TPC_OFF=70-127"}, true, 64, true},
		{"a bad list", []string{"MMK_TPC_OFF=3-1"}, false, 0, false},
		{"nothing asked", nil, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"MMK_TPC_MASK=1", "MMK_CUDA_PATH=" + a.cupti, "MMK_FAKE_GPU=" + filepath.Join(t.TempDir(), "gpu")}, tc.env...)
			r := runReplay(t, replay(context.Background(), a, writeSynced(t, 20, 2, 50), 1, env...))
			if (r.TPCMasked > 0) != tc.masked || tc.masked && r.TPCLastKeep != tc.keep {
				t.Errorf("%d kernels masked, the last on %d TPCs; want masked %v on %d", r.TPCMasked, r.TPCLastKeep, tc.masked, tc.keep)
			}
			if (r.TPCPast > 0) != tc.past {
				t.Errorf("%d kernels with a mask bit past the 72 TPC slots, want some: %v", r.TPCPast, tc.past)
			}
		})
	}
}

// TestSetTPCsByMap: with the GPU's TPC map a mask to a share of the TPCs
// keeps that share of them, masking the last maskable slots (an H100's
// ten holes are not taken for TPCs); without one the first slots are
// kept; a share that takes no TPC is no mask. A map of another GPU size
// is refused.
func TestSetTPCsByMap(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "slo", "tpcmap-h100.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := slo.ParseTPCMap(b)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := New(Config{Socket: "unused", Policy: "fifo", Log: log, Sched: kernelsched.Config{SMs: 66}, TPCMap: m}); err == nil || !strings.Contains(err.Error(), "132 SMs") {
		t.Errorf("a map of 132 SMs on an instance of 66: error %v", err)
	}
	for _, tc := range []struct {
		name  string
		tpc   *slo.TPCMap
		share float64
		want  uint32
		kept  int // the TPCs the server says the mask leaves
	}{
		{"7/8 by the map: slots 64-71 off", m, 0.875, 64, 58},
		{"3/4 by the map: 16 TPCs off", m, 0.75, 56, 50},
		{"one TPC off by the map", m, 0.985, 71, 65},
		{"a share that takes none: no mask", m, 0.999, 0, 0},
		{"every TPC", m, 1, 0, 0},
		{"7/8 without a map: 58 slots", nil, 0.875, 58, 58},
		{"3/4 without a map", nil, 0.75, 50, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Socket: "unused", Policy: "fifo", Log: log, Sched: kernelsched.Config{SMs: 132}, TPCMap: tc.tpc})
			if err != nil {
				t.Fatal(err)
			}
			sl, err := newSlot("trainer")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sl.close)
			s.tasks[1] = &task{id: 1, seq: 1, hello: Hello{Name: "trainer"}, slot: sl, names: map[uint32]string{}, local: map[uint32]string{}}
			s.SetTPCs(tc.share)
			s.retpc()
			if got := atomic.LoadUint32(sl.u32(offTPCKeep)); got != tc.want {
				t.Errorf("SetTPCs(%g): the trainer's slot keeps %d slots, want %d", tc.share, got, tc.want)
			}
			if got := tc.tpc.Kept(int(tc.want), s.tpcs); got != tc.kept {
				t.Errorf("SetTPCs(%g): %d TPCs said kept, want %d", tc.share, got, tc.kept)
			}
		})
	}
}

// TestRetpcPerRequest (issue 52, item 4, the spike): a mask set for
// requests only (tpcs F req) holds the offline tasks while an online
// task's request is in flight and lets them use every TPC between
// requests; a plain mask (tpcs F) or a rung holds them throughout.
func TestRetpcPerRequest(t *testing.T) {
	s, err := New(Config{Socket: "unused", Policy: "fifo", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []struct {
		id     kernelsched.TaskID
		name   string
		online bool
	}{{0, "svc", true}, {1, "train", false}} {
		sl, err := newSlot(tk.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sl.close)
		atomic.StoreUint32(sl.u32(offTPCState), TPCReady)
		s.tasks[tk.id] = &task{id: tk.id, seq: uint64(tk.id) + 1, hello: Hello{Name: tk.name, Online: tk.online}, slot: sl,
			names: map[uint32]string{}, local: map[uint32]string{}}
	}
	svc, train := s.tasks[0], s.tasks[1]
	half := s.maskSlots(slo.KeptTPCs(0.5, s.tpcs))
	for _, tc := range []struct {
		name  string
		set   func()
		inReq bool
		want  uint32
	}{
		{"per request, between requests: every TPC", func() { s.SetRequestTPCs(0.5) }, false, 0},
		{"per request, a request in flight: the mask", func() { s.SetRequestTPCs(0.5) }, true, uint32(half)},
		{"per request, the request over: every TPC again", func() { s.SetRequestTPCs(0.5) }, false, 0},
		{"a plain mask between requests", func() { s.SetTPCs(0.5) }, false, uint32(half)},
		{"per request at 1: no mask", func() { s.SetRequestTPCs(1) }, true, 0},
		{"a rung's mask after a per-request one: throughout", func() { s.SetRequestTPCs(0.5); s.tpcPerRequest.Store(false) }, false, uint32(half)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.set()
			svc.inReq = tc.inReq
			s.retpc()
			if got := atomic.LoadUint32(train.slot.u32(offTPCKeep)); got != tc.want {
				t.Errorf("the trainer's slot keeps %d, want %d", got, tc.want)
			}
			if got := atomic.LoadUint32(svc.slot.u32(offTPCKeep)); got != 0 {
				t.Errorf("the service's slot keeps %d, want 0 (online tasks keep every TPC)", got)
			}
		})
	}
}

// TestApplyRungPerRequest: a rung that masks during requests only
// (tpcs=F/req) sets the server's mask for requests; a rung that masks
// throughout, or none, clears it.
func TestApplyRungPerRequest(t *testing.T) {
	s := sloServer(t, []string{"priority", "tpcs=0.5/req", "tpcs=0.5"}, nil, nil, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		rung string
		want bool
	}{{"tpcs=0.5/req", true}, {"tpcs=0.5", false}, {"tpcs=0.5/req", true}, {"priority", false}} {
		r, err := slo.ParseRung(tc.rung)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.applyRung(ctx, r, false, 0); err != nil {
			t.Fatal(err)
		}
		if got := s.tpcPerRequest.Load(); got != tc.want {
			t.Errorf("after %s: per request %v, want %v", tc.rung, got, tc.want)
		}
	}
}
