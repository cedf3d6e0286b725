package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// TestMIGExportPlanRoundTrip: the fake GPUs' layouts exported as a
// mig-parted file read back (mmkctl mig plan --from-file) to layouts with
// the same instances, so a plan between a GPU's export and its own layout
// has no step; a plan to another file's configuration has the steps.
func TestMIGExportPlanRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "now.yaml")
	if _, err := mmkctl(t, "mig", "export", "--backend", "fake", "--name", "now", "--out", file); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := partitioner.ParseParted(data)
	if err != nil || len(spec.Configs) != 1 || spec.Configs[0].Name != "now" || len(spec.Configs[0].Entries) != 3 {
		t.Fatalf("export: %+v %v\n%s", spec, err, data)
	}
	// The embedded defaults: GPU 0 4g.40gb@0+2g.20gb@4+1g.10gb@6, GPU 1 3g.40gb@0+3g.40gb@4.
	for _, tc := range []struct {
		index  string
		layout string
	}{{"0", "4g.40gb@0+2g.20gb@4+1g.10gb@6"}, {"1", "3g.40gb@0+3g.40gb@4"}} {
		out, err := mmkctl(t, "mig", "plan", "--gpu", "H100-80GB", "--index", tc.index, "--from-file", file, "--to", tc.layout)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tc.layout+" -> "+tc.layout+": 0 steps") {
			t.Errorf("GPU %s from its export: %s", tc.index, out)
		}
	}
	target := filepath.Join(dir, "target.yaml")
	body := "version: v1\nmig-configs:\n  sevens:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 7\n  halves:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": 2\n"
	if err := os.WriteFile(target, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := mmkctl(t, "mig", "plan", "--gpu", "H100-80GB", "--index", "1", "--from-file", file, "--to-file", target, "--to-config", "sevens")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "3g.40gb@0+3g.40gb@4 -> 1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+1g.10gb@4+1g.10gb@5+1g.10gb@6: 18 steps") {
		t.Errorf("plan to sevens: %s", out)
	}
	js, err := mmkctl(t, "mig", "export", "--backend", "fake", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc["version"] != "v1" {
		t.Errorf("export -o json: %v\n%s", err, js)
	}
}

func TestMIGPlanFileErrors(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two.yaml")
	body := "version: v1\nmig-configs:\n  off:\n    - devices: all\n      mig-enabled: false\n  few:\n    - devices: [0]\n      mig-enabled: true\n      mig-devices:\n        \"7g.80gb\": 1\n"
	if err := os.WriteFile(two, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enable: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h100 := []string{"mig", "plan", "--gpu", "H100-80GB"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--from", "", "--to-file", two}, "flag --to-config: " + two + ": the file has 2 MIG configurations (off, few): name one"},
		{[]string{"--from", "", "--to-file", two, "--to-config", "many"}, `no MIG configuration "many" (the file has: off, few)`},
		{[]string{"--from", "", "--to-file", two, "--to-config", "off"}, `MIG configuration "off" leaves MIG off on GPU 0 (line 4)`},
		{[]string{"--from", "", "--to-file", two, "--to-config", "few", "--index", "3"}, `no entry of MIG configuration "few" applies to GPU 3 (H100-80GB)`},
		{[]string{"--from", "", "--to-file", bad}, bad + `: mig-parted config: line 5: unknown field "mig-enable" in an entry of "c"`},
		{[]string{"--from", "", "--to", "", "--to-file", two}, "flags --to and --to-file: give one of them"},
		{[]string{"--from", "", "--to-config", "few"}, "flag --to-config needs --to-file"},
		{[]string{"--from", ""}, "flag --to or --to-file is required"},
		{[]string{"--from-file", filepath.Join(dir, "none.yaml"), "--to", ""}, "flag --from-file: mig-parted config: open"},
	}
	for _, tc := range tests {
		_, err := mmkctl(t, append(h100, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
