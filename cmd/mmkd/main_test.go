package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/cli"
)

func flagsFor(t *testing.T, args ...string) *cli.Flags {
	t.Helper()
	cmd := &cobra.Command{}
	cmd.Flags().String("listen", "", "")
	cmd.Flags().String("data-dir", "", "")
	f := cli.AddConfigFlags(cmd.Flags(), map[string]string{"server.listen": "listen", "data_dir": "data-dir"})
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestServesUntilCancelled starts the daemon on the embedded defaults with
// the fake backend, reads the GPU inventory over HTTP, and stops it.
func TestServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, flagsFor(t, "--backend", "fake", "--listen", "127.0.0.1:0", "--log-level", "error", "--data-dir", t.TempDir()), func(a net.Addr) { addrs <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("mmkd stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("mmkd did not start")
	}
	resp, err := http.Get("http://" + addr.String() + "/api/v1/gpus")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"layout":"3g.40gb@0+3g.40gb@4"`) {
		t.Errorf("GET /api/v1/gpus = %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func TestBadConfigStopsStart(t *testing.T) {
	err := run(context.Background(), flagsFor(t, "--listen", "nowhere"), nil)
	if err == nil || !strings.Contains(err.Error(), "server.listen") {
		t.Errorf("bad listen address: %v", err)
	}
}
