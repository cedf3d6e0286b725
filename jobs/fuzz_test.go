package jobs

import (
	"encoding/json"
	"testing"

	"github.com/mmkgpu/mmk/slo"
)

// FuzzSpec: any JSON decoded into a Spec validates without a panic, and a
// spec that validates gets defaults that are themselves valid.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		`{"command":["python3","train.py"],"type":"offline"}`,
		`{"command":["x"],"type":"online","priority":3,"memoryMiB":8192,"env":{"A":"b"},"workload":{"model":"resnet50","batch":1,"mode":"infer"}}`,
		`{"command":[""],"type":"x","priority":-1}`,
		`{"command":["serve"],"type":"online","slo":"p99=25ms"}`,
		`{"command":["serve"],"type":"online","slo":"p99.9=1.5x"}`,
		`{"command":["train"],"type":"offline","slo":"p50=3"}`,
		`{"name":"\u0000","command":["a"],"type":"offline","taskKey":"a b"}`,
		`{"name":"claim ns/c","type":"online","claim":{"namespace":"ns","name":"c","uid":"u1","instance":"gpu0/7g@0","pods":["ns/p"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Spec
		if json.Unmarshal(b, &s) != nil {
			return
		}
		if s.Validate() != nil {
			return
		}
		if s.SLO != "" {
			j := Job{Spec: s}
			if j.Target(slo.Target{}).IsZero() {
				t.Fatalf("a valid spec's target %q does not parse", s.SLO)
			}
		}
		name, prio, mem, key := s.Defaults(4096)
		if name == "" || prio < 0 || prio > 9 || mem < 1 || key == "" || len(key) > MaxTaskKeyLen || !taskKeyPattern.MatchString(key) {
			t.Fatalf("defaults of a valid spec: %q %d %d %q", name, prio, mem, key)
		}
	})
}

// FuzzParseMiB: no size string panics, and every size read is in range.
func FuzzParseMiB(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5g", "100", "-1", "1e308TB", "0x10", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMiB(s)
		if err == nil && (v < 0 || v > MaxMemoryMiB) {
			t.Fatalf("ParseMiB(%q) = %d", s, v)
		}
	})
}
