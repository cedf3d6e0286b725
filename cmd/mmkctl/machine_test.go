package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/cmd/internal/clitest"
	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/jobs"
)

// TestMain runs the tests off the machine's state (clitest), and lets
// the test binary be the job supervisor of an mmkd the tests start
// (mmkdtest).
func TestMain(m *testing.M) {
	if os.Getenv("MMK_MMKDTEST_SHIM") == "1" {
		clitest.Child()
		os.Exit(jobs.ShimMain(os.Args[1:]))
	}
	clitest.Main(m)
}

// TestDefaultsAreNotTheMachines: where mmkctl looks without flags (the
// data directory, its socket and token) is this test binary's own
// directory (TestMain: clitest.Main), never the machine's /var/lib/mmk or
// ~/.local/state/mmk, so that what `make run` left there reaches no test
// (issue 37: TestJobCommandErrors/no_token read /var/lib/mmk/token).
func TestDefaultsAreNotTheMachines(t *testing.T) {
	cfg, err := configs.Load(configs.Options{Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cli.DataDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := cli.ClientSocket(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	for what, path := range map[string]string{"data directory": dir, "socket": sock} {
		if !strings.HasPrefix(path, tmp) || strings.HasPrefix(path, "/var/lib/mmk") {
			t.Errorf("default %s %s is the machine's: want one under %s", what, path, tmp)
		}
	}
}
