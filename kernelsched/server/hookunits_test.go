package server

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHookUnitsLayered holds the hook's C units (hook/lib) to their one-way
// layering: log and handshake at the bottom; decode over log; client and
// profile over decode (client over handshake too); observe and tpcmask
// over client; inject, the entry, over all. A unit may call the functions of the
// units below it only (log.h says so for the readers).
func TestHookUnitsLayered(t *testing.T) {
	below := map[string][]string{
		"log":       nil,
		"handshake": nil,
		"decode":    {"log"},
		"client":    {"handshake", "decode", "log"},
		"profile":   {"decode", "log"},
		"observe":   {"client", "log"},
		"tpcmask":   {"client", "log"},
		"inject":    {"tpcmask", "observe", "client", "profile", "decode", "log"},
	}
	dir := filepath.Join(repoRoot(t), "hook", "lib")
	def := regexp.MustCompile(`(?m)^[a-z_][\w \*]*?\b(mmk_\w+)\(`)
	call := regexp.MustCompile(`\b(mmk_\w+)\s*\(`)
	defined := map[string]string{} // function -> unit
	src := map[string]string{}
	for unit := range below {
		b, err := os.ReadFile(filepath.Join(dir, unit+".c"))
		if err != nil {
			t.Fatal(err)
		}
		src[unit] = string(b)
		for _, m := range def.FindAllStringSubmatch(src[unit], -1) {
			if !strings.HasPrefix(m[0], "static ") {
				defined[m[1]] = unit
			}
		}
	}
	if len(defined) < 15 {
		t.Fatalf("found only %d functions in hook/lib: %v", len(defined), defined)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.c"))
	for _, f := range files {
		unit := strings.TrimSuffix(filepath.Base(f), ".c")
		if _, ok := below[unit]; !ok && unit != "layout_check" {
			t.Errorf("hook/lib/%s.c is not placed in the layering of this test", unit)
		}
	}
	for unit, s := range src {
		for _, m := range call.FindAllStringSubmatch(s, -1) {
			owner, ok := defined[m[1]]
			if !ok || owner == unit {
				continue
			}
			if !slices.Contains(below[unit], owner) {
				t.Errorf("%s.c calls %s of %s.c, a unit above or beside it", unit, m[1], owner)
			}
		}
	}
}
