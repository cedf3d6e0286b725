package mps

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestRealDaemon runs on a GPU node with MMK_TEST_MPS=1: it starts a real
// MPS control daemon for GPU 0 (MMK_TEST_MPS_DEVICE, default 0), runs the
// client command MMK_TEST_MPS_CLIENT (a workload printing a JSON line
// with items_per_s; default bench/workloads/workload.py resnet50 inference)
// at 20 % and at 100 %, checks that both ran under the daemon (their PIDs
// in its logs) and that 20 % was slower, and quits the daemon.
func TestRealDaemon(t *testing.T) {
	if os.Getenv("MMK_TEST_MPS") != "1" {
		t.Skip("set MMK_TEST_MPS=1 on a GPU node")
	}
	device := os.Getenv("MMK_TEST_MPS_DEVICE")
	if device == "" {
		device = "0"
	}
	client := os.Getenv("MMK_TEST_MPS_CLIENT")
	if client == "" {
		client = "python3 ../bench/workloads/workload.py --job resnet50_infer --warmup 1 --seconds 3"
	}
	ctx := context.Background()
	m, err := NewManager(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Ensure(ctx, Instance{Key: "gpu" + device, Device: device})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.QuitAll(ctx); err != nil {
			t.Error(err)
		}
	}()
	speed := map[int]float64{}
	pids := map[int]int{}
	for _, pct := range []int{20, 100} {
		env, err := m.ClientEnv("gpu"+device, pct)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(client)
		cmd := exec.CommandContext(ctx, f[0], f[1:]...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("client at %d %%: %v\n%s", pct, err, out.String())
		}
		pids[pct] = cmd.Process.Pid
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var res struct {
			ItemsPerS float64 `json:"items_per_s"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("client at %d %%: %v in %q", pct, err, out.String())
		}
		speed[pct] = res.ItemsPerS
		t.Logf("client pid %d at %d %%: %.1f items/s", pids[pct], pct, res.ItemsPerS)
	}
	servers, err := d.Command(ctx, "get_server_list")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("get_server_list: %q", servers)
	control, err := d.ControlLog()
	if err != nil {
		t.Fatal(err)
	}
	server, _ := os.ReadFile(d.LogDir + "/server.log")
	logs := control + string(server)
	for pct, pid := range pids {
		if !strings.Contains(logs, strconv.Itoa(pid)) {
			t.Errorf("the client at %d %% (pid %d) is not in the daemon's logs", pct, pid)
		}
	}
	t.Logf("control.log:\n%s\nserver.log:\n%s", control, server)
	if speed[20] >= 0.9*speed[100] {
		t.Errorf("20 %% ran at %.1f items/s, 100 %% at %.1f: want 20 %% clearly slower", speed[20], speed[100])
	}
}
