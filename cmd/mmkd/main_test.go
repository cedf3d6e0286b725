package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
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
// the fake backend, reads the GPU inventory over HTTP, and stops it. Over
// TCP it answers only with the token it made on its first start (0600 in
// the data directory); over its Unix socket (0660) it needs none.
func TestServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	dataDir := t.TempDir()
	go func() {
		done <- run(ctx, flagsFor(t, "--backend", "fake", "--listen", "127.0.0.1:0", "--log-level", "error", "--data-dir", dataDir), func(a net.Addr) { addrs <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("mmkd stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("mmkd did not start")
	}
	get := func(c *http.Client, url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if code, body := get(http.DefaultClient, "http://"+addr.String()+"/api/v1/gpus", ""); code != 401 {
		t.Errorf("GET /api/v1/gpus over TCP without a token = %d %s, want 401", code, body)
	}
	tokenFile := filepath.Join(dataDir, "token")
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(tokenFile); err != nil || st.Mode().Perm() != 0o600 || len(strings.TrimSpace(string(tok))) < 32 {
		t.Errorf("token file %v %v %q: want 0600 and a long token", st.Mode(), err, tok)
	}
	if code, body := get(http.DefaultClient, "http://"+addr.String()+"/api/v1/gpus", strings.TrimSpace(string(tok))); code != 200 || !strings.Contains(body, `"layout":"3g.40gb@0+3g.40gb@4"`) {
		t.Errorf("GET /api/v1/gpus with the token = %d %s", code, body)
	}
	sock := filepath.Join(dataDir, "mmkd.sock")
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o660 || st.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket %v %v: want a socket of mode 0660", st.Mode(), err)
	}
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if code, body := get(overSocket, "http://mmkd/api/v1/gpus", ""); code != 200 {
		t.Errorf("GET /api/v1/gpus over the socket = %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket is left after shutdown: %v", err)
	}
}

func TestBadConfigStopsStart(t *testing.T) {
	err := run(context.Background(), flagsFor(t, "--listen", "nowhere"), nil)
	if err == nil || !strings.Contains(err.Error(), "server.listen") {
		t.Errorf("bad listen address: %v", err)
	}
}
