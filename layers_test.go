// Package mmk holds no code, only the test of the module's layering:
// every package sits on a floor (docs/architecture.md, "Folders, bottom
// up") and imports, in its code and in its tests, only packages of a
// lower floor or of its own folder.
package mmk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of the module's root.
const module = "github.com/mmkgpu/mmk"

// floors places each folder of the module on a floor. A folder is a unit:
// it holds its sub-folders unless they are listed themselves (the longest
// listed prefix places a package), and its packages may import one
// another. "internal/*" makes each folder under internal/ a unit of its
// own. The floors are those of docs/architecture.md; a package no entry
// places fails the test, so a new folder is given its floor here and
// there.
var floors = []struct {
	dir   string
	floor int
}{
	// 0: no mmk import outside the folder. internal/ holds only this
	// floor: small helpers that several floors share.
	{"internal/*", 0},
	{"partitioner", 0},
	{"kernelsched", 0},
	{"mps", 0},
	{"slo", 0},
	{"hook", 0},
	// 1: the predictor, the job store and runner, the data formats and
	// the configuration, over the cores.
	{"predictor", 1},
	{"jobs", 1},
	{"trace", 1},
	{"configs", 1},
	// 2: the kernel scheduler's server (its tests replay trace's kernel
	// traces) and the datasets the predictor reads.
	{"kernelsched/server", 2},
	{"data", 2},
	// 3: the placement loop and the simulators, two drivers of the cores.
	{"node", 3},
	{"sim", 3},
	// 4: mmkd's API over the node, its fakes and the in-process mmkd of
	// tests (web/mmkdtest).
	{"web", 4},
	// 5: the DRA driver, a client of the API.
	{"dra", 5},
	// 6: the binaries and what measures or packages them.
	{"cmd", 6},
	{"bench", 6},
	{"packaging", 6},
}

// place returns the floor and the unit (the folder of its entry, or the
// folder under internal/) of a package path relative to the module's
// root; ok is false for a package no entry places.
func place(rel string) (floor int, unit string, ok bool) {
	best := -1
	for i, f := range floors {
		prefix := strings.TrimSuffix(f.dir, "*")
		switch {
		case strings.HasSuffix(f.dir, "/*"):
			if !strings.HasPrefix(rel, prefix) || len(rel) == len(prefix) {
				continue
			}
		case rel != f.dir && !strings.HasPrefix(rel, f.dir+"/"):
			continue
		}
		if best < 0 || len(f.dir) > len(floors[best].dir) {
			best = i
		}
	}
	if best < 0 {
		return 0, "", false
	}
	f := floors[best]
	unit = f.dir
	if prefix, wild := strings.CutSuffix(f.dir, "*"); wild {
		unit = prefix + strings.SplitN(strings.TrimPrefix(rel, prefix), "/", 2)[0]
	}
	return f.floor, unit, true
}

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// listPackages runs `go list -json ./...` from the module's root (this
// test's directory) and returns its packages.
func listPackages(t *testing.T) []listed {
	t.Helper()
	// go test puts the go command that runs it first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list listed only %d packages", len(pkgs))
	}
	return pkgs
}

// violations returns what breaks the layering among pkgs: a package no
// entry places, and an import of a package that is neither in the
// importer's unit nor on a lower floor.
func violations(pkgs []listed) []string {
	var bad []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue // the module's root: this test
		}
		floor, unit, ok := place(rel)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no floor: give its folder one in layers_test.go and docs/architecture.md", rel))
			continue
		}
		for _, imports := range []struct {
			what string
			list []string
		}{{"imports", p.Imports}, {"its tests import", slices.Concat(p.TestImports, p.XTestImports)}} {
			seen := map[string]bool{}
			for _, imp := range imports.list {
				irel, ok := strings.CutPrefix(imp, module+"/")
				if !ok || seen[irel] {
					continue
				}
				seen[irel] = true
				ifloor, iunit, ok := place(irel)
				if !ok || iunit == unit || ifloor < floor {
					continue // an unplaced one is reported on its own
				}
				bad = append(bad, fmt.Sprintf("%s (floor %d, %s) %s %s (floor %d, %s)", rel, floor, unit, imports.what, irel, ifloor, iunit))
			}
		}
	}
	return bad
}

// TestImportsRunDown: every package of the module has a floor, and its
// code and its tests import only packages of its own folder or of a
// lower floor; so internal/ holds only the bottom floor, helpers that
// import nothing of mmk.
func TestImportsRunDown(t *testing.T) {
	for _, v := range violations(listPackages(t)) {
		t.Error(v)
	}
}

// TestViolationsFound: the check finds an upward import, one across a
// floor, a package under internal/ that imports mmk, and an unplaced
// package, and lets a package import its own folder and lower floors.
func TestViolationsFound(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	pkgs := []listed{
		{ImportPath: m("internal/cli"), Imports: []string{m("configs"), "fmt"}},
		{ImportPath: m("internal/clitest"), TestImports: []string{m("internal/cli")}},
		{ImportPath: m("jobs"), XTestImports: []string{m("node")}},
		{ImportPath: m("predictor"), Imports: []string{m("jobs")}},
		{ImportPath: m("newfolder")},
		// None of these is a violation.
		{ImportPath: module},
		{ImportPath: m("partitioner/nvmlbackend"), Imports: []string{m("partitioner/fakegpu"), m("partitioner")}},
		{ImportPath: m("web/mmkdtest"), Imports: []string{m("web"), m("node"), m("internal/unixsock")}},
		{ImportPath: m("cmd/mmkctl"), Imports: []string{m("cmd/internal/cli"), m("dra")}},
	}
	got := violations(pkgs)
	want := []string{
		"internal/cli (floor 0, internal/cli) imports configs (floor 1, configs)",
		"internal/clitest (floor 0, internal/clitest) its tests import internal/cli (floor 0, internal/cli)",
		"jobs (floor 1, jobs) its tests import node (floor 3, node)",
		"predictor (floor 1, predictor) imports jobs (floor 1, jobs)",
		"newfolder has no floor: give its folder one in layers_test.go and docs/architecture.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDocsAgree: each row of docs/architecture.md's table of floors puts
// its folders on the floor floors gives them.
func TestDocsAgree(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ([0-9]+) \| ([^|]*) \|`)
	path := regexp.MustCompile("`([^`]+)`")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 15 {
		t.Fatalf("docs/architecture.md has %d rows of floors", len(rows))
	}
	for _, r := range rows {
		want, _ := strconv.Atoi(r[1])
		for _, m := range path.FindAllStringSubmatch(r[2], -1) {
			dir := strings.TrimSuffix(m[1], "/")
			if floor, _, ok := place(dir); !ok || floor != want {
				t.Errorf("docs/architecture.md puts %s on floor %d, layers_test.go on %d (placed: %v)", dir, want, floor, ok)
			}
		}
	}
}
