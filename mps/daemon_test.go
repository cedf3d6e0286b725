package mps

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/mps/mpstest"
)

func TestDaemonLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctl := writeFake(t)
	d := &Daemon{Control: ctl, PipeDir: filepath.Join(dir, "pipe"), LogDir: filepath.Join(dir, "log"), Device: "0"}
	ctx := context.Background()
	if _, err := d.Command(ctx, "get_server_list"); err == nil {
		t.Fatal("a daemon that was never started answered")
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := d.Command(ctx, "get_server_list"); err != nil || out != "4242" {
		t.Fatalf("get_server_list = %q, %v", out, err)
	}
	if _, err := d.Command(ctx, "bogus"); err == nil || !strings.Contains(err.Error(), "unknown command bogus") {
		t.Fatalf("bad command: %v", err)
	}
	if err := d.Quit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(ctx, "get_server_list"); err == nil {
		t.Fatal("the daemon still answers after quit")
	}
	env := d.ClientEnv(30)
	for _, want := range []string{"CUDA_MPS_PIPE_DIRECTORY=" + d.PipeDir, "CUDA_VISIBLE_DEVICES=0", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30"} {
		if !slices.Contains(env, want) {
			t.Errorf("client environment %v lacks %s", env, want)
		}
	}
	if err := (&Daemon{}).Start(ctx); err == nil {
		t.Error("a daemon without directories started")
	}
}

func writeFake(t *testing.T) string {
	t.Helper()
	ctl, err := mpstest.WriteControl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

func TestManagerEnsureRestartsACrashedDaemon(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Options{Root: root, Control: writeFake(t), DefaultPercent: 40, PinnedMemLimit: "2G"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst := Instance{Key: "gpu0", Device: "GPU-1234"}
	d, err := m.Ensure(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.Ensure(ctx, inst); err != nil || again != d {
		t.Fatalf("a running daemon was not reused: %v", err)
	}
	if out, err := d.Command(ctx, "get_default_active_thread_percentage"); err != nil || out != "40" {
		t.Fatalf("default percentage %q, %v; want 40", out, err)
	}
	if pinned, _ := os.ReadFile(filepath.Join(d.PipeDir, "pinned")); strings.TrimSpace(string(pinned)) != "0 2G" {
		t.Fatalf("pinned memory limit %q", pinned)
	}
	// The daemon dies: health fails, Ensure starts a new one.
	os.Remove(filepath.Join(d.PipeDir, "running"))
	if err := m.Health(ctx, "gpu0"); err == nil {
		t.Fatal("a dead daemon is healthy")
	}
	if _, err := m.Ensure(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := m.Health(ctx, "gpu0"); err != nil {
		t.Fatal(err)
	}
	log, err := d.ControlLog()
	if err != nil || strings.Count(log, "started") != 2 {
		t.Fatalf("control log %q, %v: want two starts", log, err)
	}
	env, err := m.ClientEnv("gpu0", 30)
	if err != nil || !slices.Contains(env, "CUDA_VISIBLE_DEVICES=GPU-1234") || !slices.Contains(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30") {
		t.Fatalf("client env %v, %v", env, err)
	}
	if _, err := m.Ensure(ctx, Instance{Key: "gpu1", Device: "1"}); err != nil {
		t.Fatal(err)
	}
	if got := m.Keys(); !slices.Equal(got, []string{"gpu0", "gpu1"}) {
		t.Fatalf("keys %v", got)
	}
	if err := m.QuitAll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.Keys()) != 0 || m.Health(ctx, "gpu0") == nil {
		t.Fatal("daemons left after QuitAll")
	}
}

func TestManagerRejectsBadInput(t *testing.T) {
	if _, err := NewManager(Options{}); err == nil {
		t.Error("a manager without a root directory")
	}
	if _, err := NewManager(Options{Root: "x", DefaultPercent: 101}); err == nil || !strings.Contains(err.Error(), "101") {
		t.Errorf("default percentage 101: %v", err)
	}
	m, _ := NewManager(Options{Root: t.TempDir(), Control: writeFake(t)})
	if _, err := m.Ensure(context.Background(), Instance{Key: "../etc", Device: "0"}); err == nil || !strings.Contains(err.Error(), `instance key "../etc"`) {
		t.Errorf("bad key: %v", err)
	}
	if _, err := m.ClientEnv("gpu9", 50); err == nil || !strings.Contains(err.Error(), `no daemon for instance "gpu9"`) {
		t.Errorf("unknown instance: %v", err)
	}
}

// TestManagerAdoptsRunningDaemon: a manager of a restarted mmkd finds the
// daemon the last one started (its jobs still use it) and does not start
// a second one.
func TestManagerAdoptsRunningDaemon(t *testing.T) {
	root, ctl := t.TempDir(), writeFake(t)
	ctx := context.Background()
	first, err := NewManager(Options{Root: root, Control: ctl})
	if err != nil {
		t.Fatal(err)
	}
	d, err := first.Ensure(ctx, Instance{Key: "gpu0", Device: "0"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewManager(Options{Root: root, Control: ctl, DefaultPercent: 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Ensure(ctx, Instance{Key: "gpu0", Device: "0"}); err != nil {
		t.Fatal(err)
	}
	log, err := d.ControlLog()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log, "started"); n != 1 {
		t.Errorf("daemon started %d times, want once:\n%s", n, log)
	}
	if out, err := d.Command(ctx, "get_default_active_thread_percentage"); err != nil || out != "30" {
		t.Errorf("adopted daemon's default percentage %q, %v; want 30 (configured on adoption)", out, err)
	}
	if got := second.Keys(); !slices.Equal(got, []string{"gpu0"}) {
		t.Errorf("keys %v", got)
	}
}
