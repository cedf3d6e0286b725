package node

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node/tpcprobe"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/slo"
)

// fakeMapper maps every GPU as the H100's measured map once release is
// closed (err, if set, instead); cached says a map is kept.
type fakeMapper struct {
	release chan struct{}
	err     error
	cached  bool
	calls   atomic.Int32
}

func (f *fakeMapper) Cached(uuid string) (tpcprobe.Mapped, bool) {
	if !f.cached {
		return tpcprobe.Mapped{}, false
	}
	m := slo.H100TPCMap()
	m.UUID = uuid
	return tpcprobe.Mapped{Map: m, Cached: true, CheckSlots: 37, Kept: 33, TPCs: 66}, true
}

func (f *fakeMapper) Map(ctx context.Context, uuid string, progress func(done, total int)) (tpcprobe.Mapped, error) {
	f.calls.Add(1)
	progress(1, 74)
	select {
	case <-f.release:
	case <-ctx.Done():
		return tpcprobe.Mapped{}, ctx.Err()
	}
	if f.err != nil {
		return tpcprobe.Mapped{}, f.err
	}
	m := slo.H100TPCMap()
	m.UUID = uuid
	return tpcprobe.Mapped{Map: m, CheckSlots: 37, Kept: 33, TPCs: 66, Took: 12 * time.Second}, nil
}

// TestMasksByDefault (issue 53, item 1): with a mapper, mmkd maps each
// GPU at start while jobs wait, saying why; once the map is taken and
// checked, the GPU's controllers climb the mask ladder and its offline
// jobs' hooks may mask (MMK_TPC_MASK=1). Where mapping fails, or no
// mapper is given, or a map was kept, the view says so and the ladder
// follows.
func TestMasksByDefault(t *testing.T) {
	maskLadder, err := slo.ParseLadder([]string{"priority", "tpcs=0.75@1", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	base := slo.DefaultLadder().Strings()
	tests := []struct {
		name      string
		mapper    *fakeMapper
		noMasks   string
		waits     bool   // jobs wait for the map
		state     string // the GPU's masks at the end
		why       string
		masked    bool // the offline job's hook may mask
		ladder    []string
		mapCalled bool
	}{
		{"mapped at start", &fakeMapper{release: make(chan struct{})}, "", true, MasksOn, "mapped: 62 TPCs of 72 slots (10 holes); a mask keeping 37 slots left 33 of its 66 TPCs", true, maskLadder.Strings(), true},
		{"kept from an earlier start", &fakeMapper{cached: true}, "", false, MasksOn, "kept from an earlier start", true, maskLadder.Strings(), false},
		{"mapping failed", &fakeMapper{release: make(chan struct{}), err: errors.New("the check: a mask keeping 37 slots should leave 66 of 132 SMs; the kernel ran on 132")}, "", true, MasksOff, "mapping failed: the check: a mask keeping 37 slots", false, base, true},
		{"no mapper", nil, "the fake GPU backend has no TPCs to mask", false, MasksOff, "the fake GPU backend has no TPCs to mask", false, base, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sc := &SchedConfig{Policy: "fifo", Hook: filepath.Join(dir, "libmmkhook.so"), SocketDir: filepath.Join(dir, "run")}
			h := newHarnessWith(t, []fakegpu.GPUSpec{{Model: "H100-80GB"}}, false, curveEstimator{}, sc, func(c *Config) {
				c.SLO = &SLOConfig{MaskLadder: maskLadder, NoMasks: tc.noMasks}
				if tc.mapper != nil {
					c.SLO.Mapper = tc.mapper
				}
			})
			out := filepath.Join(t.TempDir(), "env")
			script, gate := gated(t, "0")
			j := h.submit(sh("train", "env > "+out+"; "+script, ""))
			if tc.waits {
				j = h.until(j.ID, "waiting for the map", func(j jobs.Job) bool { return j.Wait != nil && j.Wait.Class == WaitMasks })
				if j.State != jobs.Pending || !strings.Contains(j.Wait.Reason, "mapping the TPC mask slots of gpu0's (1 of 74 probes)") {
					t.Fatalf("while mapping: %s, %+v", j.State, j.Wait)
				}
				v := h.n.SLO().Masks
				if len(v) != 1 || v[0].State != MasksMapping || v[0].ProbesDone != 1 || v[0].Probes != 74 {
					t.Fatalf("masks while mapping: %+v", v)
				}
				close(tc.mapper.release)
			}
			h.state(j.ID, jobs.Running)
			v := h.n.SLO().Masks
			if len(v) != 1 || v[0].GPU != "gpu0" || v[0].State != tc.state || !strings.Contains(v[0].Why, tc.why) || strings.Join(v[0].Ladder, ",") != strings.Join(tc.ladder, ",") {
				t.Fatalf("masks %+v; want %s, why %q, ladder %v", v, tc.state, tc.why, tc.ladder)
			}
			if tc.mapper != nil && (tc.mapper.calls.Load() > 0) != tc.mapCalled {
				t.Errorf("mapped %d times; want a call: %v", tc.mapper.calls.Load(), tc.mapCalled)
			}
			h.until(j.ID, "its environment written", func(jobs.Job) bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "MMK_JOB_ID=") })
			env, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(env), "MMK_TPC_MASK=1\n"); got != tc.masked {
				t.Errorf("MMK_TPC_MASK=1 in the offline job's environment: %v, want %v", got, tc.masked)
			}
			if in := h.n.SLO().Instances; len(in) != 1 || strings.Join(in[0].Ladder, ",") != strings.Join(tc.ladder, ",") {
				t.Errorf("the instance's controller: %+v; want ladder %v", in, tc.ladder)
			}
			open(t, gate)
			h.state(j.ID, jobs.Succeeded)
		})
	}
}

// TestMasksOfAGPUThatAppears (issue 53, item 1: "when a GPU appears"): a
// GPU the loop reads after the start gets its masks decided then; a GPU
// already decided is not mapped again.
func TestMasksOfAGPUThatAppears(t *testing.T) {
	ladder, err := slo.ParseLadder([]string{"priority", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMapper{cached: true}
	n := &Node{cfg: Config{Log: slog.New(slog.DiscardHandler), Now: time.Now, SLO: &SLOConfig{MaskLadder: ladder, Mapper: f}}}
	g := func(i int, uuid string) gpuInfo {
		return gpuInfo{state: partitioner.GPUState{GPU: partitioner.GPU{Index: i, UUID: uuid, SMs: 132}}}
	}
	n.maskNew([]gpuInfo{g(0, "GPU-a")}) // before the start: nothing
	if v := n.maskViews(); len(v) != 0 {
		t.Fatalf("masks before the start: %+v", v)
	}
	var wg sync.WaitGroup
	n.startMasks(context.Background(), &wg, []gpuInfo{g(0, "GPU-a")})
	n.setMap("GPU-a", nil) // were GPU-a decided again, its map would be back
	n.maskNew([]gpuInfo{g(0, "GPU-a"), g(1, "GPU-b")})
	wg.Wait()
	v := n.maskViews()
	if len(v) != 2 || v[0].GPU != "gpu0" || v[1].GPU != "gpu1" || v[1].State != MasksOn || n.takenMap("GPU-a") != nil || n.takenMap("GPU-b") == nil {
		t.Fatalf("masks %+v; want gpu0 as it was and gpu1 decided on appearing", v)
	}
}

// TestLadderOfAServingScheduler (a review's finding): a kernel scheduler
// started before a GPU's map was taken (jobs adopted at a restart) keeps
// the ladder it started with, and the GPU's new offline jobs follow it
// (no MMK_TPC_MASK=1 beside a controller that climbs hold), until it
// stops; then the GPU's masks decide.
func TestLadderOfAServingScheduler(t *testing.T) {
	masks, err := slo.ParseLadder([]string{"priority", "tpcs=0.5", "suspend"})
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: Config{Log: slog.New(slog.DiscardHandler), Now: time.Now, SLO: &SLOConfig{MaskLadder: masks, Mapper: &fakeMapper{cached: true}}},
		scheds: map[string]*sched{}}
	g := gpuInfo{state: partitioner.GPUState{GPU: partitioner.GPU{Index: 0, UUID: "GPU-a", SMs: 132}}, keys: []string{"gpu0"}}
	n.scheds["gpu0"] = &sched{ladder: slo.DefaultLadder()}
	var wg sync.WaitGroup
	n.startMasks(context.Background(), &wg, []gpuInfo{g})
	if v, _ := n.maskView("GPU-a"); v.State != MasksOn {
		t.Fatalf("masks %+v, want on", v)
	}
	if got := n.ladderOf(g).Strings(); !slices.Equal(got, slo.DefaultLadder().Strings()) || n.ladderMasks(g) {
		t.Errorf("beside the serving scheduler: ladder %v (masks %v), want its own, %v", got, n.ladderMasks(g), slo.DefaultLadder().Strings())
	}
	delete(n.scheds, "gpu0")
	if got := n.ladderOf(g).Strings(); !slices.Equal(got, masks.Strings()) || !n.ladderMasks(g) {
		t.Errorf("once it stopped: ladder %v, want the mask ladder", got)
	}
}
