package kernelsched

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestFIKITTwoRunProfile is FIKIT's measurement over two runs (section 3.2
// as the issue describes it; the paper's own numbers were not at hand):
// per kernel id, SK is the mean duration over every occurrence and SG the
// mean idle gap from its end to the next kernel of the same run.
//
//	run 1: A [0,10]  B [15,20]  A [30,40]
//	run 2: A [0,12]  B [20,24]  A [34,44]
//
// A: durations 10,10,12,10 -> SK 10.5; gaps after it 5 (run 1), 8 (run 2),
// none after the last A of a run -> SG 6.5 over 2 gaps.
// B: durations 5,4 -> SK 4.5; gaps 10, 10 -> SG 10.
func TestFIKITTwoRunProfile(t *testing.T) {
	A, B := kernelOf("A"), kernelOf("B")
	obs := func(id KernelID, start, end time.Duration) Observation {
		return Observation{ID: id, Start: start * us, End: end * us}
	}
	b := NewProfileBuilder("job")
	for _, run := range [][]Observation{
		{obs(A, 0, 10), obs(B, 15, 20), obs(A, 30, 40)},
		{obs(A, 0, 12), obs(B, 20, 24), obs(A, 34, 44)},
	} {
		if err := b.AddRun(run); err != nil {
			t.Fatal(err)
		}
	}
	p := b.Profile()
	if p.Runs != 2 || p.RunKernels != 3 || p.RunSpan != 42*us || p.RunBusy != 25500*time.Nanosecond {
		t.Fatalf("run stats: runs %d kernels %v span %v busy %v", p.Runs, p.RunKernels, p.RunSpan, p.RunBusy)
	}
	a, _ := p.Lookup(A)
	if a.Count != 4 || a.SK != 10500*time.Nanosecond || a.Gaps != 2 || a.SG != 6500*time.Nanosecond || a.SGMax != 8*us {
		t.Fatalf("A: %+v", a)
	}
	if a.SKStd != 866*time.Nanosecond { // population std of 10,10,12,10
		t.Fatalf("A SK spread %v, want 866ns", a.SKStd)
	}
	bs, _ := p.Lookup(B)
	if bs.Count != 2 || bs.SK != 4500*time.Nanosecond || bs.Gaps != 2 || bs.SG != 10*us || bs.SGStd != 0 {
		t.Fatalf("B: %+v", bs)
	}
	if est := p.Estimate(kernelOf("C")); est.Known {
		t.Fatalf("unknown kernel has an estimate: %+v", est)
	}
}

func TestProfileBuilderRejects(t *testing.T) {
	A := kernelOf("A")
	tests := []struct {
		name string
		run  []Observation
		want string
	}{
		{"empty run", nil, "no kernels"},
		{"ends before start", []Observation{{ID: A, Start: 10, End: 5}}, "before it starts"},
		{"unsorted", []Observation{{ID: A, Start: 10, End: 12}, {ID: A, Start: 5, End: 6}}, "sort the run"},
		{"bad id", []Observation{{ID: KernelID{Name: "x"}, Start: 0, End: 1}}, "zero dimension"},
	}
	for _, tt := range tests {
		err := NewProfileBuilder("k").AddRun(tt.run)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

func TestProfileFileRoundTrip(t *testing.T) {
	b := NewProfileBuilder("resnet")
	run := []Observation{
		{ID: kernelOf("A"), Regs: 32, SharedMem: 1024, Start: 0, End: 10 * us, Launch: 1},
		{ID: KernelID{Name: "B", Grid: Dim3{4, 2, 1}, Block: Dim3{128, 1, 1}}, Start: 15 * us, End: 20 * us, Launch: 3 * us},
	}
	if err := b.AddRun(run); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profiles.json")
	want := []*TaskProfile{b.Profile()}
	if err := writeProfiles(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(got, want...) {
		p.index = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got[0], want[0])
	}
}

func TestReadProfilesRejects(t *testing.T) {
	good := `{"format":"mmk-kernel-profile","version":1,"tasks":[{"key":"k","runs":1,"run_kernels":1,"run_span_us":1,"run_busy_us":1,"kernels":[{"name":"a","grid":[1,1,1],"block":[1,1,1],"regs":0,"smem":0,"count":1,"sk_us":1,"sk_std_us":0,"gaps":0,"sg_us":0,"sg_std_us":0,"sg_max_us":0}]}]}`
	if _, err := ReadProfiles(strings.NewReader(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	tests := []struct {
		name, from, to, want string
	}{
		{"version", `"version":1`, `"version":2`, "version: 2 is not supported"},
		{"format", `"mmk-kernel-profile"`, `"other"`, "format"},
		{"unknown field", `"regs":0`, `"regs":0,"colour":1`, "unknown field"},
		{"negative duration", `"sk_us":1`, `"sk_us":-1`, "tasks[0]: kernels[0]: sk_us"},
		{"gaps above count", `"gaps":0`, `"gaps":2`, "gaps: 2"},
		{"zero grid", `"grid":[1,1,1]`, `"grid":[0,1,1]`, "grid"},
		{"no runs", `"runs":1`, `"runs":0`, "runs: 0"},
		{"max below mean", `"sg_us":0`, `"sg_us":5`, "sg_max_us"},
		{"empty key", `"key":"k"`, `"key":""`, "key: empty"},
		{"trailing data", `]}]}`, `]}]} {}`, "after the document"},
	}
	for _, tt := range tests {
		doc := strings.Replace(good, tt.from, tt.to, 1)
		_, err := ReadProfiles(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// TestProfilesRejectDuplicates: a kernel twice in a task, or a task key
// twice, is refused by the reader and, before anything is written, by
// the writer (which writes only what the reader takes).
func TestProfilesRejectDuplicates(t *testing.T) {
	p := &TaskProfile{Key: "k", Runs: 1, Kernels: []KernelStat{{ID: kernelOf("a"), Count: 1}, {ID: kernelOf("a"), Count: 1}}}
	one := &TaskProfile{Key: "k", Runs: 1, Kernels: []KernelStat{{ID: kernelOf("a"), Count: 1}}}
	for _, tc := range []struct {
		name     string
		profiles []*TaskProfile
	}{
		{"a kernel twice", []*TaskProfile{p}},
		{"a key twice", []*TaskProfile{one, one}},
	} {
		var buf bytes.Buffer
		if err := WriteProfiles(&buf, tc.profiles); err == nil || !strings.Contains(err.Error(), "appears twice") || buf.Len() > 0 {
			t.Errorf("%s: written (%d bytes), err %v; want nothing written and an error", tc.name, buf.Len(), err)
		}
	}
	doc := `{"format":"mmk-kernel-profile","version":1,"tasks":[{"key":"k","runs":1,"run_kernels":1,"run_span_us":1,"run_busy_us":1,"kernels":[` +
		`{"name":"a","grid":[1,1,1],"block":[32,1,1],"regs":0,"smem":0,"count":1,"sk_us":1,"sk_std_us":0,"gaps":0,"sg_us":0,"sg_std_us":0,"sg_max_us":0},` +
		`{"name":"a","grid":[1,1,1],"block":[32,1,1],"regs":0,"smem":0,"count":1,"sk_us":1,"sk_std_us":0,"gaps":0,"sg_us":0,"sg_std_us":0,"sg_max_us":0}]}]}`
	if _, err := ReadProfiles(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("duplicate kernel read: %v", err)
	}
}

func FuzzReadProfiles(f *testing.F) {
	f.Add([]byte(`{"format":"mmk-kernel-profile","version":1,"tasks":[{"key":"k","runs":1,"kernels":[{"name":"a","grid":[1,1,1],"block":[1,1,1],"count":1,"sk_us":1e300}]}]}`))
	f.Add([]byte(`{"format":"mmk-kernel-profile","version":1,"tasks":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ReadProfiles(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What loads must save and load again unchanged.
		var buf bytes.Buffer
		if err := WriteProfiles(&buf, ps); err != nil {
			t.Fatal(err)
		}
		again, err := ReadProfiles(&buf)
		if err != nil {
			t.Fatalf("reloading a valid profile: %v", err)
		}
		if len(again) != len(ps) {
			t.Fatalf("reloaded %d profiles, want %d", len(again), len(ps))
		}
	})
}

func TestOccupancy(t *testing.T) {
	tests := []struct {
		name       string
		shape      Shape
		sms        int
		blocks     int
		smsUsed    int
		limit      string
		wantErrSub string
	}{
		{"threads bound", Shape{Grid: Dim3{100, 1, 1}, Block: Dim3{256, 1, 1}}, 132, 8, 13, "threads", ""},
		{"block count bound", Shape{Grid: Dim3{1000, 1, 1}, Block: Dim3{32, 1, 1}}, 132, 32, 32, "blocks", ""},
		{"registers bound", Shape{Grid: Dim3{1000, 1, 1}, Block: Dim3{256, 1, 1}, Regs: 64}, 132, 4, 132, "registers", ""},
		{"shared memory bound", Shape{Grid: Dim3{264, 1, 1}, Block: Dim3{128, 1, 1}, SharedMem: 100 * 1024}, 132, 2, 132, "shared memory", ""},
		{"capped by the MPS share", Shape{Grid: Dim3{1000, 1, 1}, Block: Dim3{1024, 1, 1}}, 66, 2, 66, "threads", ""},
		{"too many threads", Shape{Grid: Dim3{1, 1, 1}, Block: Dim3{2048, 1, 1}}, 132, 0, 0, "", "more than 1024"},
		{"a block whose thread count overflows", Shape{Grid: Dim3{1, 1, 1}, Block: Dim3{1 << 30, 1 << 30, 1 << 30}}, 132, 0, 0, "", "more than 1024"},
		{"a huge grid", Shape{Grid: Dim3{1 << 31, 1 << 31, 1 << 31}, Block: Dim3{32, 1, 1}}, 132, 32, 132, "blocks", ""},
		{"zero grid", Shape{Grid: Dim3{0, 1, 1}, Block: Dim3{1, 1, 1}}, 132, 0, 0, "", "zero dimension"},
		{"too much shared memory", Shape{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}, SharedMem: 300 * 1024}, 132, 0, 0, "", "shared memory"},
	}
	for _, tt := range tests {
		occ, err := Hopper.Occupancy(tt.shape, tt.sms)
		if tt.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErrSub)
			}
			continue
		}
		if err != nil || occ.BlocksPerSM != tt.blocks || occ.SMs != tt.smsUsed || occ.Limit != tt.limit {
			t.Errorf("%s: %+v, %v; want %d blocks/SM on %d SMs (%s)", tt.name, occ, err, tt.blocks, tt.smsUsed, tt.limit)
		}
	}
}

func TestSchedulerRejectsBadInput(t *testing.T) {
	if _, err := New("nope", Config{}); err == nil || !strings.Contains(err.Error(), `policy "nope"`) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := New("fifo", Config{Inflight: -1}); err == nil || !strings.Contains(err.Error(), "inflight") {
		t.Errorf("bad inflight: %v", err)
	}
	s, _ := New("fikit", Config{})
	if _, err := s.AddTask(TaskSpec{Name: "x", Priority: 10}); err == nil || !strings.Contains(err.Error(), "priority 10") {
		t.Errorf("bad priority: %v", err)
	}
	if _, err := s.AddTask(TaskSpec{Name: "x", MPSPercent: 101}); err == nil || !strings.Contains(err.Error(), "MPS percentage 101") {
		t.Errorf("bad MPS: %v", err)
	}
	if _, err := s.Arrive(0, Launch{Task: 3}); err == nil || !strings.Contains(err.Error(), "no task 3") {
		t.Errorf("unknown task: %v", err)
	}
	id, _ := s.AddTask(TaskSpec{Name: "x"})
	if _, err := s.Arrive(0, Launch{Task: id, Kernel: KernelID{Name: "k", Grid: Dim3{1, 1, 1}, Block: Dim3{4096, 1, 1}}}); err == nil {
		t.Error("a block of 4096 threads was accepted")
	}
	if err := s.Complete(0, id, 99); err == nil || !strings.Contains(err.Error(), "no released kernel 99") {
		t.Errorf("unknown kernel: %v", err)
	}
	if _, err := ParsePolicies("fikit, bogus"); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("ParsePolicies: %v", err)
	}
	if got, err := ParsePolicies("fikit,fifo,fikit"); err != nil || !reflect.DeepEqual(got, []string{"fikit", "fifo"}) {
		t.Errorf("ParsePolicies = %v, %v", got, err)
	}
}

func TestRemoveTaskFreesItsKernels(t *testing.T) {
	b := newBench(t, "mmk", Config{})
	b.task(TaskSpec{Name: "A", Priority: 5, Profile: profileOf("A", map[string][2]time.Duration{"a": {10 * us, 0}})})
	b.arrive(0, "A", "a")
	if err := b.s.RemoveTask(b.tasks["A"]); err != nil {
		t.Fatal(err)
	}
	if b.s.used != (usage{}) {
		t.Fatalf("usage after removal: %+v", b.s.used)
	}
	if _, err := b.s.Arrive(1, Launch{Task: b.tasks["A"], Kernel: kernelOf("a")}); err == nil {
		t.Fatal("a removed task could still launch")
	}
}
