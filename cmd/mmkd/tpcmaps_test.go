package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadTPCMaps: every *.json of the directory is a GPU's map, keyed
// by the UUID inside; a bad file, a map without a UUID, two maps of one
// GPU and a missing directory are errors naming what is wrong.
func TestLoadTPCMaps(t *testing.T) {
	h100, err := os.ReadFile(filepath.Join("..", "..", "slo", "tpcmap-h100.json"))
	if err != nil {
		t.Fatal(err)
	}
	small := `{"uuid": "GPU-small", "slots": 2, "sms": 4, "tpcs": {"0": [0, 1]}, "holes": [1]}`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
		err   string
	}{
		{"none", nil, nil, ""},
		{"two GPUs", map[string]string{"a.json": string(h100), "b.json": small, "notes.txt": "not a map"}, []string{"GPU-25dfe4a8-34f4-b80a-e36f-fbd3bbb5e964", "GPU-small"}, ""},
		{"not a map", map[string]string{"a.json": `{"slots": 0}`}, nil, "a.json: tpc map: slots 0"},
		{"no uuid", map[string]string{"a.json": strings.Replace(small, `"uuid": "GPU-small", `, "", 1)}, nil, "a.json: no uuid"},
		{"one GPU twice", map[string]string{"a.json": small, "b.json": small}, nil, "both maps of GPU-small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			maps, err := loadTPCMaps(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(maps) != len(tc.want) {
				t.Fatalf("%d maps, want %d", len(maps), len(tc.want))
			}
			for _, u := range tc.want {
				if maps[u] == nil || maps[u].UUID != u {
					t.Errorf("no map of %s", u)
				}
			}
		})
	}
	if _, err := loadTPCMaps(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "slo.tpc_maps") {
		t.Errorf("a missing directory: error %v", err)
	}
	file := filepath.Join(t.TempDir(), "map.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTPCMaps(file); err == nil || !strings.Contains(err.Error(), "slo.tpc_maps") {
		t.Errorf("a file, not a directory: error %v", err)
	}
	if maps, err := loadTPCMaps(""); err != nil || maps != nil {
		t.Errorf("no directory: %v, %v", maps, err)
	}
}
