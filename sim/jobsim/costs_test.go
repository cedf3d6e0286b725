package jobsim

import (
	"strings"
	"testing"
)

// ckptSample has the shape of bench/gpu/ckpt_cost.py's lines on a GPU.
const ckptSample = `{"what": "process", "import_s": 2.1, "cuda_init_s": 0.4, "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0"}
{"what": "job", "job": "resnet50_train", "batch": 32, "mode": "train", "ckpt_mib": 195.3, "build_s": 0.9, "first_iter_s": 1.2, "iter_ms": 60.1, "save_s": [0.5, 0.3, 0.4], "restore_s": [0.2, 0.25, 0.3]}
{"what": "job", "job": "vgg16_infer", "batch": 32, "mode": "infer", "ckpt_mib": 527.8, "build_s": 1.5, "first_iter_s": 0.8, "iter_ms": 9.0, "save_s": [1.0, 2.0], "restore_s": [0.6, 0.4]}
`

// TestReadCheckpointLines: medians per job type, the GPU from the process
// line; dry runs and bad numbers are refused with the line named.
func TestReadCheckpointLines(t *testing.T) {
	got, err := ReadCheckpointLines(strings.NewReader(ckptSample), "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != "x.jsonl" || got.GPU != "NVIDIA H100 80GB HBM3" || len(got.Types) != 2 {
		t.Fatalf("table %+v", got)
	}
	if c := got.Types["resnet50_train"]; c.SaveS != 0.4 || c.RestoreS != 0.25 || c.CkptMiB != 195.3 {
		t.Errorf("resnet50_train %+v: want medians 0.4 and 0.25", c)
	}
	if c := got.Types["vgg16_infer"]; c.SaveS != 1.5 || c.RestoreS != 0.5 {
		t.Errorf("vgg16_infer %+v: want medians 1.5 and 0.5", c)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"what": "process", "dry": true}`, "dry run"},
		{`{"what": "job", "job": "a", "save_s": [], "restore_s": [1]}`, "line 1 (a): save_s: no repetition"},
		{`{"what": "job", "job": "a", "save_s": [-1], "restore_s": [1]}`, "want seconds >= 0"},
		{`{"what": "job", "save_s": [1], "restore_s": [1]}`, "without a job"},
		{`{"what": "other"}`, `what "other"`},
		{`{"what": `, "line 1"},
		{`{"what": "process"}`, "no job line"},
	} {
		if _, err := ReadCheckpointLines(strings.NewReader(tc.in), "x"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestBuiltinRestartCosts: the built-in table reads, and what it holds is
// usable.
func TestBuiltinRestartCosts(t *testing.T) {
	rc, err := BuiltinRestartCosts()
	if err != nil {
		t.Fatal(err)
	}
	if (rc.Source == "") != (len(rc.Types) == 0) {
		t.Errorf("table %+v: a source without types or types without a source", rc)
	}
}

// FuzzReadCheckpointLines: any input gives a table or an error, never a
// panic, and a table read has usable costs.
func FuzzReadCheckpointLines(f *testing.F) {
	f.Add(ckptSample)
	f.Add(`{"what": "job", "job": "a", "save_s": [1e308, 1e308], "restore_s": [0]}`)
	f.Fuzz(func(t *testing.T, s string) {
		rc, err := ReadCheckpointLines(strings.NewReader(s), "f")
		if err != nil {
			return
		}
		for typ, c := range rc.Types {
			if !(c.SaveS >= 0 && c.RestoreS >= 0) {
				t.Fatalf("%s: %+v", typ, c)
			}
		}
	})
}
