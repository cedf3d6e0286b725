package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/sim/jobsim"
)

// TestDerive: the table written reads back as the simulator reads its
// built-in one, medians and all.
func TestDerive(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "ckpt.jsonl"), filepath.Join(dir, "table.json")
	lines := `{"what": "process", "gpu": "NVIDIA H100"}
{"what": "job", "job": "bert_train", "ckpt_mib": 1250, "save_s": [2, 4, 3], "restore_s": [1, 1, 2]}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := derive(in, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	back, err := jobsim.ReadCheckpointLines(strings.NewReader(lines), in)
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Types["bert_train"]; c.SaveS != 3 || c.RestoreS != 1 || !strings.Contains(string(data), `"save_s": 3`) || !strings.Contains(string(data), `"gpu": "NVIDIA H100"`) {
		t.Errorf("table %s", data)
	}
	if err := derive(filepath.Join(dir, "none"), out); err == nil {
		t.Error("a missing input gave no error")
	}
}
