package mps

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeControl stands in for nvidia-cuda-mps-control: -d records that the
// daemon runs (in its pipe directory, as the real one does); commands on
// stdin answer only while it runs; quit stops it.
const fakeControl = `#!/bin/sh
state="$CUDA_MPS_PIPE_DIRECTORY/running"
if [ "$1" = "-d" ]; then touch "$state"; echo "started" >> "$CUDA_MPS_LOG_DIRECTORY/control.log"; exit 0; fi
read cmd
[ -f "$state" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
case "$cmd" in
get_server_list) echo 4242 ;;
quit) rm "$state" ;;
*) echo "unknown command $cmd" >&2; exit 1 ;;
esac
`

func TestDaemonLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "control")
	if err := os.WriteFile(ctl, []byte(fakeControl), 0o755); err != nil {
		t.Fatal(err)
	}
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
