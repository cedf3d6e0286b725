package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/configs"
)

func TestMain(m *testing.M) {
	Main(m)
}

// TestDefaultsLeadIntoTheSandbox: under Main, the data directory and
// token a command finds without flags are the sandbox's, holding
// MachineToken, and the caller's MMK_* configuration is gone.
func TestDefaultsLeadIntoTheSandbox(t *testing.T) {
	for _, k := range []string{"MMK_DATA_DIR", "MMK_SERVER_TOKEN", "MMK_ADDR", "MMK_TOKEN"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%q is set", k, v)
		}
	}
	cfg, err := configs.Load(configs.Options{Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cli.DataDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Dir(os.Getenv(envMachine))
	if !strings.HasPrefix(dir, sandbox+string(filepath.Separator)) || !strings.HasPrefix(sandbox, filepath.Clean(os.TempDir())) {
		t.Errorf("default data directory %s, want one in the sandbox %s under %s", dir, sandbox, os.TempDir())
	}
	if tok, err := cli.Token(cfg); err != nil || tok != MachineToken {
		t.Errorf("default token %q, %v; want the planted %q", tok, err, MachineToken)
	}
	if home, _ := os.UserHomeDir(); !strings.HasPrefix(home, sandbox) {
		t.Errorf("home %s is not the sandbox's", home)
	}
}

// TestChangedNamesWrites: what a test makes, changes or removes in the
// machine's or the home's directories is reported, nothing else.
func TestChangedNamesWrites(t *testing.T) {
	dir := t.TempDir()
	sb := &sandbox{dir: dir, machine: filepath.Join(dir, "var-lib-mmk"), home: filepath.Join(dir, "home")}
	if err := sb.populate(); err != nil {
		t.Fatal(err)
	}
	var err error
	if sb.before, err = sb.snapshot(); err != nil {
		t.Fatal(err)
	}
	if got := sb.changed(); len(got) != 0 {
		t.Fatalf("changed before any write: %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "elsewhere"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := sb.changed(); len(got) != 0 {
		t.Errorf("a file outside the machine's and the home's directories counted: %v", got)
	}
	machineToken := filepath.Join(sb.machine, cli.TokenName)
	homeToken := filepath.Join(sb.home, ".local", "state", "mmk", cli.TokenName)
	if err := os.WriteFile(filepath.Join(sb.machine, "mmk.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(machineToken, []byte("other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(homeToken); err != nil {
		t.Fatal(err)
	}
	want := []string{homeToken + " (removed)", filepath.Join(sb.machine, "mmk.db"), machineToken} // sorted
	if got := sb.changed(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("changed %v, want %v", got, want)
	}
}
