package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

func intp(v int) *int { return &v }

func validSpec() Spec {
	return Spec{Command: []string{"python3", "train.py"}, Kind: Offline}
}

// TestValidate: each bad field is refused with an error that names it.
func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Spec)
		field string // "" : valid
	}{
		{"minimal", func(*Spec) {}, ""},
		{"full", func(s *Spec) {
			s.Name, s.Env, s.WorkDir, s.Kind, s.Priority, s.MemoryMiB = "r50", map[string]string{"A_1": "x"}, "/tmp", Online, intp(3), 8192
			s.Workload, s.TaskKey = &Workload{Model: "resnet50", Batch: 1, Mode: "infer"}, "r50:bs1"
		}, ""},
		{"no command", func(s *Spec) { s.Command = nil }, "command"},
		{"empty program", func(s *Spec) { s.Command = []string{""} }, "command[0]"},
		{"NUL in arg", func(s *Spec) { s.Command = []string{"a", "b\x00c"} }, "command[1]"},
		{"bad type", func(s *Spec) { s.Kind = "batch" }, "type"},
		{"no type", func(s *Spec) { s.Kind = "" }, "type"},
		{"priority 10", func(s *Spec) { s.Priority = intp(10) }, "priority"},
		{"priority -1", func(s *Spec) { s.Priority = intp(-1) }, "priority"},
		{"MPS priority 2", func(s *Spec) { s.MPSPriority = intp(2) }, "mpsPriority"},
		{"MPS priority -1", func(s *Spec) { s.MPSPriority = intp(-1) }, "mpsPriority"},
		{"MPS priority 0", func(s *Spec) { s.MPSPriority = intp(0) }, ""},
		{"negative memory", func(s *Spec) { s.MemoryMiB = -1 }, "memoryMiB"},
		{"huge memory", func(s *Spec) { s.MemoryMiB = MaxMemoryMiB + 1 }, "memoryMiB"},
		{"relative workdir", func(s *Spec) { s.WorkDir = "data" }, "workdir"},
		{"bad env name", func(s *Spec) { s.Env = map[string]string{"1A": "x"} }, "env"},
		{"reserved env", func(s *Spec) { s.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "0"} }, "env.CUDA_VISIBLE_DEVICES"},
		{"reserved MMK env", func(s *Spec) { s.Env = map[string]string{"MMK_PRIORITY": "0"} }, "env.MMK_PRIORITY"},
		{"control char in name", func(s *Spec) { s.Name = "a\nb" }, "name"},
		{"long name", func(s *Spec) { s.Name = strings.Repeat("n", MaxNameLen+1) }, "name"},
		{"workload mode", func(s *Spec) { s.Workload = &Workload{Model: "resnet50", Mode: "serve"} }, "workload.mode"},
		{"workload model", func(s *Spec) { s.Workload = &Workload{Model: "Res Net", Mode: "train"} }, "workload.model"},
		{"workload batch", func(s *Spec) { s.Workload = &Workload{Model: "resnet50", Mode: "train", Batch: -2} }, "workload.batch"},
		{"task key", func(s *Spec) { s.TaskKey = "a b" }, "taskKey"},
		{"slo", func(s *Spec) { s.Kind, s.SLO = Online, "p99=25ms" }, ""},
		{"slo ratio", func(s *Spec) { s.Kind, s.SLO = Online, "p99.9=1.5x" }, ""},
		{"slo offline", func(s *Spec) { s.SLO = "p99=25ms" }, "slo"},
		{"slo no unit", func(s *Spec) { s.Kind, s.SLO = Online, "p99=25" }, "slo"},
		{"slo zero", func(s *Spec) { s.Kind, s.SLO = Online, "p99=0ms" }, "slo"},
		{"slo negative", func(s *Spec) { s.Kind, s.SLO = Online, "p99=-3ms" }, "slo"},
		{"slo percentile", func(s *Spec) { s.Kind, s.SLO = Online, "p100=3ms" }, "slo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.edit(&s)
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FieldError on %s", err, tc.field)
			}
			if fe.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Errorf("error %q names field %q, want %q", err, fe.Field, tc.field)
			}
		})
	}
}

// TestSLOErrorNamesValue: a bad target's error names the field, the value
// and what is wrong with it.
func TestSLOErrorNamesValue(t *testing.T) {
	s := validSpec()
	s.Kind, s.SLO = Online, "p99=25"
	err := s.Validate()
	if err == nil || err.Error() != `slo: the bound "25" has no unit: write a duration such as 25ms or a ratio such as 25x (got "p99=25")` {
		t.Errorf("%v", err)
	}
}

// TestSLONormalised: a good target is stored in its normal form, whatever
// spaces or spelling it came in (issue 54, item 8).
func TestSLONormalised(t *testing.T) {
	for in, want := range map[string]string{
		" p99 = 25ms ": "p99=25ms",
		"p99=\t25ms\n": "p99=25ms",
		"P99.0=1500us": "p99=1.5ms",
		"p99.9=1.50x":  "p99.9=1.5x",
	} {
		s := validSpec()
		s.Kind, s.SLO = Online, in
		if err := s.Validate(); err != nil {
			t.Errorf("%q: %v", in, err)
		} else if s.SLO != want {
			t.Errorf("%q stored as %q, want %q", in, s.SLO, want)
		}
	}
}

// TestJobTarget: an online job's target, else the default; none for an
// offline job.
func TestJobTarget(t *testing.T) {
	def := slo.MustParse("p99=3x")
	on := Job{Spec: Spec{Kind: Online, SLO: "p99=25ms"}}
	if got := on.Target(def); got != slo.MustParse("p99=25ms") {
		t.Errorf("declared: %v", got)
	}
	on.Spec.SLO = ""
	if got := on.Target(def); got != def {
		t.Errorf("default: %v", got)
	}
	off := Job{Spec: Spec{Kind: Offline}}
	if got := off.Target(def); !got.IsZero() {
		t.Errorf("offline: %v", got)
	}
}

// TestMPSClientPriority: online jobs run at normal MPS priority, offline
// ones below normal, unless the spec says.
func TestMPSClientPriority(t *testing.T) {
	tests := []struct {
		kind Kind
		set  *int
		want int
	}{
		{Online, nil, 0}, {Offline, nil, 1}, {Online, intp(1), 1}, {Offline, intp(0), 0},
	}
	for _, tc := range tests {
		s := Spec{Kind: tc.kind, MPSPriority: tc.set}
		if got := s.MPSClientPriority(); got != tc.want {
			t.Errorf("%s, spec %v: %d, want %d", tc.kind, tc.set, got, tc.want)
		}
	}
}

// TestDefaults: name, priority, memory and task key a job gets.
func TestDefaults(t *testing.T) {
	tests := []struct {
		spec      Spec
		name, key string
		priority  int
		memory    int64
	}{
		{Spec{Command: []string{"/usr/bin/python3"}, Kind: Offline}, "python3", "python3", 5, 4096},
		{Spec{Command: []string{"x"}, Kind: Online}, "x", "x", 0, 4096},
		{Spec{Command: []string{"x"}, Kind: Online, Priority: intp(2), MemoryMiB: 100, Name: "svc a"}, "svc a", "svc_a", 2, 100},
		{Spec{Command: []string{"x"}, Kind: Offline, Workload: &Workload{Model: "vgg16", Batch: 64, Mode: "train"}}, "x", "vgg16_train_bs64", 5, 4096},
		{Spec{Command: []string{"x"}, Kind: Offline, Workload: &Workload{Model: "vgg16", Mode: "infer"}, TaskKey: "k"}, "x", "k", 5, 4096},
	}
	for _, tc := range tests {
		name, prio, mem, key := tc.spec.Defaults(4096)
		if name != tc.name || prio != tc.priority || mem != tc.memory || key != tc.key {
			t.Errorf("%+v: got %q %d %d %q, want %q %d %d %q", tc.spec, name, prio, mem, key, tc.name, tc.priority, tc.memory, tc.key)
		}
	}
}

// TestTransitions: the state machine's allowed and refused moves.
func TestTransitions(t *testing.T) {
	tests := []struct {
		from, to State
		ok       bool
	}{
		{Pending, Placed, true}, {Pending, Running, false}, {Pending, Cancelled, true},
		{Placed, Running, true}, {Placed, Pending, true}, {Running, Succeeded, true},
		{Running, Restarting, true}, {Restarting, Placed, true}, {Restarting, Running, false},
		{Succeeded, Running, false}, {Failed, Pending, false}, {Cancelled, Cancelled, false},
	}
	for _, tc := range tests {
		if got := tc.from.CanMove(tc.to); got != tc.ok {
			t.Errorf("%s -> %s: %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
	for _, s := range States() {
		if s.Terminal() != (len(transitions[s]) == 0) {
			t.Errorf("%s: terminal %v but has moves %v", s, s.Terminal(), transitions[s])
		}
	}
	if _, err := ParseState("done"); err == nil {
		t.Error("ParseState took an unknown state")
	}
}

// TestID: ids are 16 characters, valid, and sort by time.
func TestID(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	a, b := NewID(t0), NewID(t0.Add(time.Millisecond))
	if !ValidID(a) || !ValidID(b) {
		t.Fatalf("ids %q %q are not valid", a, b)
	}
	if a >= b {
		t.Errorf("id %q of a later time does not sort after %q", b, a)
	}
	if got := encodeID(0, 31); got != "000000000000000z" {
		t.Errorf("encodeID(0, 31) = %s", got)
	}
	// 1 ms is bit 32: character 6 from the right (bits 30-34) holds 4.
	if got := encodeID(1, 0); got != "0000000004000000" {
		t.Errorf("encodeID(1, 0) = %s, want the time bit just above the 32 random bits", got)
	}
	for _, bad := range []string{"", "0000000000000000x", "000000000000000u", "../../etc/passwd"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

// TestParseMiB: memory sizes in the units users write.
func TestParseMiB(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"8GiB", 8192, true}, {"8G", 8192, true}, {"8gi", 8192, true}, {"512MiB", 512, true},
		{"1.5GiB", 1536, true}, {"1GB", 954, true}, {"100MiB", 100, true}, {"1KiB", 1, true}, {"0", 0, true},
		{"100", 0, false}, {"8", 0, false}, {"1.5", 0, false},
		{"", 0, false}, {"-1G", 0, false}, {"8 parsecs", 0, false}, {"NaN", 0, false}, {"1e30G", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseMiB(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseMiB(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
