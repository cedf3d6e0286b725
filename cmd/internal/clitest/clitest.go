// Package clitest keeps a test binary off the machine's mmk state. Its
// Main runs the tests with every default that leads to the machine
// pointed into a directory of the binary's own: root's data directory
// (/var/lib/mmk), the home directory (~/.local/state/mmk), the XDG
// directories, and the MMK_* configuration, MMK_ADDR and MMK_TOKEN of the
// shell that ran the tests. A token in the sandbox's data directories
// stands for one a `make run` left behind: a test that leans on a default
// meets it (mmkd answers 401, "not valid") instead of passing or failing
// by what the machine holds, and a test that writes there fails the
// binary. A test that needs a data directory makes its own (t.TempDir).
package clitest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/configs"
)

// MachineToken is the token the sandbox plants where the machine's
// would be: a test that sends it read a default it should not have.
const MachineToken = "clitest-machine-token-that-no-test-may-use"

// envMachine passes the sandbox's machine data directory to processes
// the tests start from the test binary (Child).
const envMachine = "MMK_TEST_MACHINE_DATA_DIR"

// Main runs m's tests in a sandbox (the package's doc says what it
// holds), removes it and exits with the tests' status, or 1 if a test
// wrote into the sandbox's machine or home data directories.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// Child applies the sandbox of the test binary that started this
// process: call it first in a TestMain that may run the binary as a
// command (mmkd, a job supervisor) rather than as tests.
func Child() {
	if dir := os.Getenv(envMachine); dir != "" {
		cli.UseMachineDataDir(dir)
	}
}

func run(m *testing.M) int {
	sb, err := newSandbox()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clitest:", err)
		return 1
	}
	defer os.RemoveAll(sb.dir)
	restore := cli.UseMachineDataDir(sb.machine)
	defer restore()
	code := m.Run()
	if changed := sb.changed(); len(changed) > 0 {
		fmt.Fprintf(os.Stderr, "clitest: the tests wrote into the default data directories, which stand for the machine's (give each test its own with --data-dir or MMK_DATA_DIR): %s\n",
			strings.Join(changed, ", "))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// sandbox is the directory standing for the machine's state.
type sandbox struct {
	dir string
	// machine stands for /var/lib/mmk, home for the home directory.
	machine, home string
	// before is what the machine and home directories held at the start:
	// each path and, for a file, its content.
	before map[string]string
}

// newSandbox makes the sandbox and points the environment at it.
func newSandbox() (*sandbox, error) {
	dir, err := os.MkdirTemp("", "mmk-test-machine-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	sb := &sandbox{dir: dir, machine: filepath.Join(dir, "var-lib-mmk"), home: filepath.Join(dir, "home")}
	if err := sb.populate(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := sb.setenv(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if sb.before, err = sb.snapshot(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return sb, nil
}

// populate plants MachineToken in the machine's and the home's data
// directories, as an earlier mmkd would have left it.
func (sb *sandbox) populate() error {
	for _, d := range []string{sb.machine, filepath.Join(sb.home, ".local", "state", "mmk")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, cli.TokenName), []byte(MachineToken+"\n"), 0o600); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// setenv points HOME and the XDG directories into the sandbox, keeps the
// go command's own directories where they were (a test may run go), and
// clears the variables that say where mmkd is or configure it.
func (sb *sandbox) setenv() error {
	// The go command finds its cache, modules and settings from HOME
	// unless told: tell it where they are now, before HOME moves.
	if cache, err := os.UserCacheDir(); err == nil && os.Getenv("GOCACHE") == "" {
		os.Setenv("GOCACHE", filepath.Join(cache, "go-build"))
	}
	if home, err := os.UserHomeDir(); err == nil && os.Getenv("GOPATH") == "" {
		os.Setenv("GOPATH", filepath.Join(home, "go"))
	}
	if conf, err := os.UserConfigDir(); err == nil && os.Getenv("GOENV") == "" {
		os.Setenv("GOENV", filepath.Join(conf, "go", "env"))
	}
	vars := map[string]string{"HOME": sb.home, envMachine: sb.machine}
	for _, x := range []string{"STATE", "CONFIG", "CACHE", "DATA"} {
		vars["XDG_"+x+"_HOME"] = filepath.Join(sb.dir, "xdg", strings.ToLower(x))
	}
	vars["XDG_RUNTIME_DIR"] = filepath.Join(sb.dir, "xdg", "runtime")
	for k, v := range vars {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	names, err := configs.EnvNames()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for _, k := range append(names, "MMK_ADDR", "MMK_TOKEN") {
		if err := os.Unsetenv(k); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// snapshot is every path under the machine and home directories and, for
// a regular file, its content.
func (sb *sandbox) snapshot() (map[string]string, error) {
	out := map[string]string{}
	for _, root := range []string{sb.machine, sb.home} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			out[path] = ""
			if d.Type().IsRegular() {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				out[path] = string(b)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	return out, nil
}

// changed lists the paths the tests made, changed or removed under the
// machine and home directories, sorted.
func (sb *sandbox) changed() []string {
	now, err := sb.snapshot()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for p, c := range now {
		if was, ok := sb.before[p]; !ok || was != c {
			out = append(out, p)
		}
	}
	for p := range sb.before {
		if _, ok := now[p]; !ok {
			out = append(out, p+" (removed)")
		}
	}
	sort.Strings(out)
	return out
}
