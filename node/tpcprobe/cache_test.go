package tpcprobe

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMapPath: a GPU's map is kept under its UUID only where the UUID is
// fit for a file name (letters, digits and dashes, 1 to 80 of them) and
// there is a cache directory and a driver version.
func TestMapPath(t *testing.T) {
	m := &Mapper{CacheDir: "/cache", Driver: "550.90"}
	for _, tc := range []struct {
		uuid string
		kept bool
	}{
		{"GPU-83b469be-019b-3688-473e-e96d7dec2dd5", true},
		{strings.Repeat("a", 80), true},
		{strings.Repeat("a", 81), false},
		{"", false},
		{"../GPU-1", false},
		{"GPU 1", false},
		{"GPU-1\n", false},
	} {
		want := ""
		if tc.kept {
			want = filepath.Join("/cache", tc.uuid+".json")
		}
		if got := m.path(tc.uuid); got != want {
			t.Errorf("path(%q) = %q, want %q", tc.uuid, got, want)
		}
	}
	for _, m := range []*Mapper{{Driver: "550.90"}, {CacheDir: "/cache"}} {
		if got := m.path("GPU-1"); got != "" {
			t.Errorf("%+v: path %q, want none", m, got)
		}
	}
}
