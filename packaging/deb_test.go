// Package packaging holds the tests of the .deb's build script
// (build-deb.sh); the script and the package's files sit beside them.
package packaging

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// debFiles are the files every mmk package must hold.
var debFiles = []string{"/usr/bin/mmkd", "/usr/bin/mmkctl", "/usr/bin/mmk-dra", "/usr/lib/mmk/libmmkhook.so", "/usr/lib/mmk/mmk-tpcprobe",
	"/lib/systemd/system/mmkd.service", "/etc/mmk/mmk.yaml"}

// TestDebFiles: the .deb ships mmk-dra beside mmkd and mmkctl (issue 37,
// item 9). build-deb.sh --list is the package's manifest; where dpkg-deb
// is installed the package is built from stand-in binaries and its file
// list must be that manifest.
func TestDebFiles(t *testing.T) {
	out, err := exec.Command("./build-deb.sh", "--list").Output()
	if err != nil {
		t.Fatalf("build-deb.sh --list: %v", err)
	}
	manifest := strings.Fields(string(out))
	for _, f := range debFiles {
		if !slices.Contains(manifest, f) {
			t.Errorf("build-deb.sh --list lacks %s:\n%s", f, out)
		}
	}
	for _, tool := range []string{"dpkg-deb", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the manifest is checked, not a package", tool)
		}
	}
	const version = "1.2.3"
	bin := standIns(t, version)
	build := exec.Command("./build-deb.sh", version, bin)
	build.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	deb, err := build.Output()
	if err != nil {
		t.Fatalf("build-deb.sh: %v", err)
	}
	contents, err := exec.Command("dpkg-deb", "-c", strings.TrimSpace(string(deb))).Output()
	if err != nil {
		t.Fatalf("dpkg-deb -c: %v", err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(contents)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || strings.HasPrefix(f[0], "d") {
			continue
		}
		got = append(got, strings.TrimPrefix(f[len(f)-1], "."))
	}
	slices.Sort(got)
	want := slices.Clone(manifest)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the package holds\n%s\nthe manifest (build-deb.sh --list) says\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
