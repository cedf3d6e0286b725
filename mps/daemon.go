// Package mps runs NVIDIA MPS control daemons: one per GPU or GPU
// instance, each with its own pipe and log directory, and gives the
// environment a client process needs to reach it. It shells out to
// nvidia-cuda-mps-control, the only interface NVIDIA provides.
package mps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// PriorityEnv is the client variable that sets an MPS client's priority
// (CUDA 12.2+ drivers): PriorityNormal or PriorityBelowNormal. Work of a
// below-normal client gives way to a normal client's on the GPU, which
// protects an online job from an offline one under the same daemon
// (docs/results/pareto-h100.md measures how much).
const (
	PriorityEnv         = "CUDA_MPS_CLIENT_PRIORITY"
	PriorityNormal      = 0
	PriorityBelowNormal = 1
)

// Daemon is one MPS control daemon.
type Daemon struct {
	// Control is the nvidia-cuda-mps-control binary (default: from PATH).
	Control string
	// PipeDir and LogDir are the daemon's CUDA_MPS_PIPE_DIRECTORY and
	// CUDA_MPS_LOG_DIRECTORY.
	PipeDir, LogDir string
	// Device is the CUDA_VISIBLE_DEVICES of the daemon (a GPU index or a
	// GPU or MIG UUID); empty: all.
	Device string
}

func (d *Daemon) control() string {
	if d.Control == "" {
		return "nvidia-cuda-mps-control"
	}
	return d.Control
}

func (d *Daemon) env() []string {
	env := append(os.Environ(), "CUDA_MPS_PIPE_DIRECTORY="+d.PipeDir, "CUDA_MPS_LOG_DIRECTORY="+d.LogDir)
	if d.Device != "" {
		env = append(env, "CUDA_VISIBLE_DEVICES="+d.Device)
	}
	return env
}

// Start creates the directories and starts the daemon (it forks into the
// background), then checks that it answers.
func (d *Daemon) Start(ctx context.Context) error {
	if d.PipeDir == "" || d.LogDir == "" {
		return fmt.Errorf("mps: pipe directory %q and log directory %q must be set", d.PipeDir, d.LogDir)
	}
	for _, dir := range []string{d.PipeDir, d.LogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("mps: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, d.control(), "-d")
	cmd.Env = d.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mps: start %s -d: %w: %s", d.control(), err, strings.TrimSpace(string(out)))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := d.Command(ctx, "get_server_list")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mps: daemon started but does not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Command sends one command to the daemon and returns its answer.
func (d *Daemon) Command(ctx context.Context, command string) (string, error) {
	cmd := exec.CommandContext(ctx, d.control())
	cmd.Env = d.env()
	cmd.Stdin = strings.NewReader(command + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mps: %q: %w: %s", command, err, strings.TrimSpace(out.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Quit stops the daemon (and its servers).
func (d *Daemon) Quit(ctx context.Context) error {
	_, err := d.Command(ctx, "quit")
	return err
}

// ClientEnv is what a client process needs to run under this daemon with
// an active thread percentage (1-100; 0 leaves the daemon's default).
func (d *Daemon) ClientEnv(percent int) []string {
	env := []string{"CUDA_MPS_PIPE_DIRECTORY=" + d.PipeDir, "CUDA_MPS_LOG_DIRECTORY=" + d.LogDir}
	if d.Device != "" {
		env = append(env, "CUDA_VISIBLE_DEVICES="+d.Device)
	}
	if percent > 0 {
		env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(percent))
	}
	return env
}
