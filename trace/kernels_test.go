package trace

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

const line = `{"iter": %s, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "regs": 16, "smem": 0, "occ": 10, "stream": 7, "ts": %s, "dur": 2.5, "launch_ts": %s, "launch_api": "cuLaunchKernel"}`

func traceLine(iter, ts, launch string) string { return fmt.Sprintf(line, iter, ts, launch) }

func TestReadKernelTrace(t *testing.T) {
	text := strings.Join([]string{
		traceLine("0", "1000.5", "990"),
		traceLine("-1", "1001", "991"),
		traceLine("0", "1010", "1000"),
		traceLine("1", "2000", "1995"),
	}, "\n")
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(text))
	w.Close()
	for name, data := range map[string][]byte{"plain": []byte(text), "gzip": gz.Bytes()} {
		tr, err := ReadKernelTrace("t", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(tr.Iterations) != 2 || len(tr.Iterations[0]) != 2 || len(tr.Iterations[1]) != 1 {
			t.Fatalf("%s: iterations %d", name, len(tr.Iterations))
		}
		k := tr.Iterations[0][0]
		// Times are relative to the iteration's first launch call (990 us).
		if k.Start != 10500*time.Nanosecond || k.Launch != 0 || k.Dur != 2500*time.Nanosecond || k.Regs != 16 {
			t.Fatalf("%s: first kernel %+v", name, k)
		}
	}
}

func TestReadKernelTraceRejects(t *testing.T) {
	good := traceLine("0", "1", "1")
	tests := []struct{ name, from, to, want string }{
		{"missing iter", `"iter": 0, `, ``, "iter: missing"},
		{"bad grid", `"grid": [1, 1, 1]`, `"grid": [1, 1]`, "grid"},
		{"zero block", `"block": [32, 1, 1]`, `"block": [0, 1, 1]`, "block"},
		{"negative duration", `"dur": 2.5`, `"dur": -1`, "dur"},
		{"missing ts", `"ts": 1, `, ``, "ts: missing"},
		{"unknown field", `"occ": 10`, `"occ": 10, "x": 1`, "unknown field"},
		{"too many registers", `"regs": 16`, `"regs": 300`, "regs"},
		{"empty name", `"name": "k"`, `"name": ""`, "name: empty"},
		{"not json", good, `{`, "line 1"},
	}
	for _, tt := range tests {
		_, err := ReadKernelTrace("t", strings.NewReader(strings.Replace(good, tt.from, tt.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := ReadKernelTrace("t", strings.NewReader(traceLine("-1", "1", "1"))); err == nil {
		t.Error("a trace with no iteration was accepted")
	}
}

func FuzzReadKernelTrace(f *testing.F) {
	f.Add([]byte(traceLine("0", "1", "1")))
	f.Add([]byte(traceLine("3", "1e15", "0") + "\n" + traceLine("3", "5", "9e18")))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadKernelTrace("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, it := range tr.Iterations {
			if len(it) == 0 {
				t.Fatal("empty iteration")
			}
			for _, k := range it {
				if k.Dur < 0 || k.ID.Validate() != nil {
					t.Fatalf("invalid kernel accepted: %+v", k)
				}
			}
		}
		if _, err := tr.Profile("fuzz"); err != nil {
			t.Fatalf("a loaded trace does not profile: %v", err)
		}
	})
}

func TestBuiltinTracesLoad(t *testing.T) {
	names := BuiltinNames()
	if len(names) != 12 {
		t.Fatalf("%d built-in traces, want 12", len(names))
	}
	for _, n := range names {
		tr, err := LoadKernelTrace(n, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Iterations) != 3 || tr.IterTime <= 0 {
			t.Errorf("%s: %d iterations, iteration time %v", n, len(tr.Iterations), tr.IterTime)
		}
	}
	tr, _ := LoadKernelTrace("resnet50_infer_bs1", "")
	if got := len(tr.Iterations[0]); got != 218 {
		t.Errorf("resnet50 bs=1 has %d kernels per iteration, want 218 (summary.txt)", got)
	}
	if tr.IterTime != 3300*time.Microsecond {
		t.Errorf("resnet50 bs=1 iteration time %v, want 3.3ms", tr.IterTime)
	}
	if _, err := LoadKernelTrace("no_such_trace", t.TempDir()); err == nil || !strings.Contains(err.Error(), "resnet50_infer_bs1") {
		t.Errorf("unknown trace: %v (want the list of names)", err)
	}
}

func TestParseSummary(t *testing.T) {
	got := ParseSummary("resnet50 infer bs=1 iter_ms=3.30 kernels/iter=218\nbad line\nx y bs=2 iter_ms=abc\n")
	if len(got) != 1 || got["resnet50_infer_bs1"] != 3300*time.Microsecond {
		t.Fatalf("ParseSummary = %v", got)
	}
}

// TestHookProfileRunGaps: in a hook trace the pause between consecutive
// runs, up to MaxRunGap, is a gap after the run's last kernel (a request
// loop's think time); a longer pause, or one across a missing run, is not.
func TestHookProfileRunGaps(t *testing.T) {
	var b strings.Builder
	// Runs at 0, 2.1 ms, 4.7 ms (gaps 2 and 2.5 ms after "last"), then a
	// 50 ms pause, then a run numbered 5 after a missing 4.
	starts := []struct {
		iter int
		at   float64
	}{{0, 0}, {1, 2100}, {2, 4700}, {3, 54800}, {5, 56900}}
	for _, s := range starts {
		fmt.Fprintf(&b, `{"iter":%d,"name":"first","grid":[1,1,1],"block":[32,1,1],"regs":16,"smem":0,"occ":0,"stream":7,"ts":%g,"dur":50,"launch_ts":%g,"launch_api":"cuLaunchKernel"}`+"\n", s.iter, s.at, s.at)
		fmt.Fprintf(&b, `{"iter":%d,"name":"last","grid":[1,1,1],"block":[32,1,1],"regs":16,"smem":0,"occ":0,"stream":7,"ts":%g,"dur":50,"launch_ts":%g,"launch_api":"cuLaunchKernel"}`+"\n", s.iter, s.at+50, s.at+10)
	}
	kt, err := ReadKernelTrace("hook", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := kt.HookProfile("job")
	if err != nil {
		t.Fatal(err)
	}
	var last kernelsched.KernelStat
	for _, k := range p.Kernels {
		if k.ID.Name == "last" {
			last = k
		}
	}
	if last.Gaps != 2 || last.SG != 2250*time.Microsecond || last.SGMax != 2500*time.Microsecond {
		t.Errorf("gaps after the last kernel: %d, mean %v, max %v; want 2, 2.25ms, 2.5ms", last.Gaps, last.SG, last.SGMax)
	}
}

// TestHookProfileSkipsImplausibleRuns: an iteration with a kernel record
// out of bounds (one without its GPU start time beside kernels stamped
// 147 days into the GPU's clock: a run span of 147 days, seen on an
// H200) is left out of the hook's profile, which
// the kernel scheduler can then read; a trace with nothing else is an
// error. Before, the profile held a run span of 147 days, no reader took
// it, and the scheduler tried to load it every second.
func TestHookProfileSkipsImplausibleRuns(t *testing.T) {
	const t0 = 1.2737e13 // microseconds into the GPU's clock
	record := func(iter int, name string, ts, dur float64) string {
		return fmt.Sprintf(`{"iter":%d,"name":%q,"grid":[1,1,1],"block":[32,1,1],"regs":16,"smem":0,"occ":0,"stream":7,"ts":%g,"dur":%g,"launch_ts":%g,"launch_api":"cuLaunchKernel"}`+"\n", iter, name, ts, dur, ts)
	}
	for _, tc := range []struct {
		name  string
		trace string
		runs  int // 0: an error
	}{
		{"one bad iteration of three",
			record(0, "a", t0, 50) + record(0, "b", t0+60, 50) + record(1, "a", 0, 50) + record(1, "b", t0+2060, 50) + record(2, "a", t0+4000, 50) + record(2, "b", t0+4060, 50), 2},
		{"every iteration bad", record(0, "a", 0, 50) + record(0, "b", t0+60, 50), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kt, err := ReadKernelTrace("hook", strings.NewReader(tc.trace))
			if err != nil {
				t.Fatal(err)
			}
			p, err := kt.HookProfile("job")
			if tc.runs == 0 {
				if err == nil {
					t.Fatalf("a profile of %d runs, want an error", p.Runs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Runs != tc.runs || p.RunSpan != 110*time.Microsecond {
				t.Errorf("runs %d, span %v; want %d, 110µs", p.Runs, p.RunSpan, tc.runs)
			}
			var buf bytes.Buffer
			if err := kernelsched.WriteProfiles(&buf, []*kernelsched.TaskProfile{p}); err != nil {
				t.Fatal(err)
			}
			if _, err := kernelsched.ReadProfiles(&buf); err != nil {
				t.Errorf("the profile written is not read back: %v", err)
			}
		})
	}
}
