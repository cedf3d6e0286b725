package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemon is one mmkd process of the sweep: its binary, data directory
// and address are the same across its starts.
type daemon struct {
	bin, data, addr string
	cmd             *exec.Cmd
	starts          int
}

// newDaemon picks a free loopback port, kept for every start.
func newDaemon(bin, data string) (*daemon, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	return &daemon{bin: bin, data: data, addr: addr}, nil
}

// start starts mmkd and waits until /readyz answers 200; it returns how
// long that took. Its log goes to the data directory's parent, one file
// per start.
func (d *daemon) start() (time.Duration, error) {
	d.starts++
	logf, err := os.Create(filepath.Join(filepath.Dir(d.data), fmt.Sprintf("mmkd-%03d.log", d.starts)))
	if err != nil {
		return 0, fmt.Errorf("mmkd log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(d.bin, "--backend", "fake", "--data-dir", d.data, "--listen", d.addr, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=false")
	if os.Geteuid() == 0 {
		// Over TCP the token's jobs run as mmkd's user.
		cmd.Env = append(cmd.Env, "MMK_JOBS_ALLOW_ROOT=true")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start mmkd: %w", err)
	}
	d.cmd = cmd
	c := &http.Client{Timeout: time.Second}
	for time.Since(t0) < 60*time.Second {
		if tok, err := d.token(); err == nil {
			req, _ := http.NewRequest(http.MethodGet, "http://"+d.addr+"/readyz", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return time.Since(t0), nil
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("mmkd start %d not ready within 60 s (its log: %s)", d.starts, logf.Name())
}

// kill sends SIGKILL and reaps the process.
func (d *daemon) kill() error {
	if d.cmd == nil {
		return nil
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill mmkd: %w", err)
	}
	_ = d.cmd.Wait() // killed: its exit status says so
	d.cmd = nil
	return nil
}

// stop ends mmkd with SIGTERM, as a service manager would.
func (d *daemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	d.cmd = nil
}

// token is mmkd's API token (it keeps it across starts).
func (d *daemon) token() (string, error) {
	b, err := os.ReadFile(filepath.Join(d.data, "token"))
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
