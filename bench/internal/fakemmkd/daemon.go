// Package fakemmkd runs mmkd on the fake GPU backend for the benchmark
// commands that start, kill and restart it (bench/restart,
// bench/killsweep): its kernel schedulers off, a loopback port kept
// across its starts, and a start measured to /readyz answering 200.
package fakemmkd

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Daemon is one mmkd process of a benchmark: its binary, data directory
// and address are the same across its starts.
type Daemon struct {
	Bin, Data, Addr string
	// LogDir, if set, gets each start's log as mmkd-NNN.log (at
	// LogLevel, "warn" if unset); else a start that fails says the
	// log's end.
	LogDir, LogLevel string
	cmd              *exec.Cmd
	starts           int
}

// New is a Daemon of bin on data at a free loopback port.
func New(bin, data string) (*Daemon, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	return &Daemon{Bin: bin, Data: data, Addr: addr}, nil
}

// Start starts mmkd and waits until /readyz answers 200; it returns how
// long that took.
func (d *Daemon) Start() (time.Duration, error) {
	d.starts++
	var log io.Writer
	var mem bytes.Buffer
	where := "its log below"
	if d.LogDir != "" {
		f, err := os.Create(filepath.Join(d.LogDir, fmt.Sprintf("mmkd-%03d.log", d.starts)))
		if err != nil {
			return 0, fmt.Errorf("mmkd log: %w", err)
		}
		defer f.Close()
		log, where = f, "its log: "+f.Name()
	} else {
		log = &mem
	}
	level := d.LogLevel
	if level == "" {
		level = "warn"
	}
	cmd := exec.Command(d.Bin, "--backend", "fake", "--data-dir", d.Data, "--listen", d.Addr, "--log-level", level)
	cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=false")
	if os.Geteuid() == 0 {
		// Over TCP the token's jobs run as mmkd's user.
		cmd.Env = append(cmd.Env, "MMK_JOBS_ALLOW_ROOT=true")
	}
	cmd.Stdout, cmd.Stderr = log, log
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start mmkd: %w", err)
	}
	d.cmd = cmd
	c := &http.Client{Timeout: time.Second}
	for time.Since(t0) < 60*time.Second {
		if tok, err := d.Token(); err == nil {
			req, _ := http.NewRequest(http.MethodGet, "http://"+d.Addr+"/readyz", nil)
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
	d.Stop()
	return 0, fmt.Errorf("mmkd start %d not ready within 60 s (%s)\n%s", d.starts, where, strings.TrimSpace(mem.String()))
}

// Kill sends SIGKILL and reaps the process.
func (d *Daemon) Kill() error {
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

// Stop ends mmkd with SIGTERM, as a service manager would.
func (d *Daemon) Stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	d.cmd = nil
}

// Token is mmkd's API token (it keeps it across starts).
func (d *Daemon) Token() (string, error) {
	b, err := os.ReadFile(filepath.Join(d.Data, "token"))
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
