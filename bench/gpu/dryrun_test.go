package gpu

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// dryRun runs a script of this folder with DRY=1 and env, mmkd and
// mmkctl built for it (MMK_BIN) and a free port for mmkd (PORT: tests of
// other checkouts may run on the machine), and returns its output folder
// (the script's first argument, before args). It skips the test in
// -short mode or without python3 and curl (fails instead with
// MMK_E2E_DRY_TEST=required, as in CI).
func dryRun(t *testing.T, takes, script string, args []string, env ...string) (out string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs for " + takes)
	}
	for _, tool := range []string{"python3", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("MMK_E2E_DRY_TEST") == "required" {
				t.Fatalf("%s not found: %v", tool, err)
			}
			t.Skipf("%s not found", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/mmkd", "./cmd/mmkctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out = t.TempDir()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "bench/gpu", script), out}, args...)...)
	cmd.Env = append(append(os.Environ(), "DRY=1", "MMK_BIN="+bin, "PORT="+freePort(t)), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}
	return out
}

// freePort is a TCP port of the loopback address that nothing listened
// on a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// jsonLines decodes each line of a JSON-lines file.
func jsonLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
