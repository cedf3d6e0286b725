package kernelsched

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProfileDir(t *testing.T) {
	dir := t.TempDir()
	b := NewProfileBuilder("resnet50/bs1..x")
	k := KernelID{Name: "k", Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}
	if err := b.AddRun([]Observation{{ID: k, Start: 0, End: time.Microsecond}}); err != nil {
		t.Fatal(err)
	}
	path, err := ProfilePath(dir, "resnet50/bs1..x")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || strings.Contains(filepath.Base(path), "/") || strings.HasPrefix(filepath.Base(path), ".") {
		t.Fatalf("path %s escapes %s or hides", path, dir)
	}
	if p, err := LoadProfileFor(dir, "resnet50/bs1..x"); p != nil || err != nil {
		t.Fatalf("before saving: %v, %v; want nothing", p, err)
	}
	if err := writeProfiles(path, []*TaskProfile{b.Profile()}); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfileFor(dir, "resnet50/bs1..x")
	if err != nil || p == nil || p.Runs != 1 {
		t.Fatalf("loaded %+v, %v", p, err)
	}
	all, err := LoadProfilesFrom(dir)
	if err != nil || len(all) != 1 {
		t.Fatalf("directory: %d profiles, %v", len(all), err)
	}
	for _, bad := range []string{"", "  "} {
		if _, err := ProfilePath(dir, bad); err == nil {
			t.Errorf("key %q: no error", bad)
		}
	}
	if _, err := LoadProfilesFrom(filepath.Join(dir, "none")); err == nil {
		t.Error("missing path: no error")
	}
}
