package mps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// Instance names a GPU or GPU instance that gets its own MPS daemon.
type Instance struct {
	// Key names the daemon's directories ("gpu0", "mig-..."): letters,
	// digits, '.', '_' and '-'.
	Key string
	// Device is its CUDA_VISIBLE_DEVICES: a GPU index or a GPU or MIG UUID.
	Device string
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Options configure a Manager.
type Options struct {
	// Root holds each daemon's pipe and log directories (Root/KEY/pipe,
	// Root/KEY/log).
	Root string
	// Control is the nvidia-cuda-mps-control binary (default: from PATH).
	Control string
	// DefaultPercent is the active thread percentage of clients that do
	// not set their own (0: MPS's default, 100).
	DefaultPercent int
	// PinnedMemLimit, when set, limits each client's pinned device memory
	// (MPS syntax, e.g. "2G").
	PinnedMemLimit string
	Logger         *slog.Logger
}

// Manager runs one MPS control daemon per instance.
type Manager struct {
	opts    Options
	mu      sync.Mutex
	daemons map[string]*Daemon
}

// NewManager checks the options and returns a manager with no daemon.
func NewManager(opts Options) (*Manager, error) {
	if opts.Root == "" {
		return nil, fmt.Errorf("mps: root directory is empty")
	}
	if opts.DefaultPercent < 0 || opts.DefaultPercent > 100 {
		return nil, fmt.Errorf("mps: default percentage %d is outside 0..100", opts.DefaultPercent)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, daemons: map[string]*Daemon{}}, nil
}

// Ensure returns the instance's daemon, started and answering: it adopts
// one an earlier mmkd left running in the instance's pipe directory,
// starts one that is missing and restarts one that stopped answering
// (crashed).
// The daemon's default percentage and pinned-memory limit are applied
// after each start.
func (m *Manager) Ensure(ctx context.Context, inst Instance) (*Daemon, error) {
	if !keyPattern.MatchString(inst.Key) {
		return nil, fmt.Errorf("mps: instance key %q: use letters, digits, '.', '_' and '-'", inst.Key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.daemons[inst.Key]
	if ok && d.Device == inst.Device {
		if _, err := d.Command(ctx, "get_server_list"); err == nil {
			return d, nil
		}
		m.opts.Logger.Warn("MPS daemon does not answer; restarting", "instance", inst.Key, "device", inst.Device)
		_ = d.Quit(ctx) // best effort: it may be gone already
	} else if ok {
		// The instance was made again (a new device): its old daemon, in
		// the same pipe directory, goes first.
		m.opts.Logger.Info("MPS daemon of a remade instance; restarting", "instance", inst.Key, "device", inst.Device, "was", d.Device)
		_ = d.Quit(ctx)
	}
	dir := filepath.Join(m.opts.Root, inst.Key)
	d = &Daemon{Control: m.opts.Control, PipeDir: filepath.Join(dir, "pipe"), LogDir: filepath.Join(dir, "log"), Device: inst.Device}
	if !ok {
		// A daemon an earlier mmkd started answers in its pipe directory:
		// its clients (jobs that outlived that mmkd) still use it, so it
		// is adopted, not started twice.
		if _, err := d.Command(ctx, "get_server_list"); err == nil {
			if err := m.configure(ctx, d); err != nil {
				return nil, fmt.Errorf("instance %s: %w", inst.Key, err)
			}
			m.daemons[inst.Key] = d
			m.opts.Logger.Info("MPS daemon adopted", "instance", inst.Key, "device", inst.Device, "pipe", d.PipeDir)
			return d, nil
		}
	}
	if err := d.Start(ctx); err != nil {
		return nil, fmt.Errorf("instance %s: %w", inst.Key, err)
	}
	if err := m.configure(ctx, d); err != nil {
		_ = d.Quit(ctx)
		return nil, fmt.Errorf("instance %s: %w", inst.Key, err)
	}
	m.daemons[inst.Key] = d
	m.opts.Logger.Info("MPS daemon started", "instance", inst.Key, "device", inst.Device, "pipe", d.PipeDir)
	return d, nil
}

// configure applies the defaults to a fresh daemon.
func (m *Manager) configure(ctx context.Context, d *Daemon) error {
	if p := m.opts.DefaultPercent; p > 0 {
		if _, err := d.Command(ctx, "set_default_active_thread_percentage "+strconv.Itoa(p)); err != nil {
			return err
		}
	}
	if l := m.opts.PinnedMemLimit; l != "" {
		if _, err := d.Command(ctx, "set_default_device_pinned_mem_limit 0 "+l); err != nil {
			return err
		}
	}
	return nil
}

// Health asks an instance's daemon for its servers.
func (m *Manager) Health(ctx context.Context, key string) error {
	d, err := m.daemon(key)
	if err != nil {
		return err
	}
	if _, err := d.Command(ctx, "get_server_list"); err != nil {
		return fmt.Errorf("instance %s: %w", key, err)
	}
	return nil
}

// ClientEnv is what a client of the instance at an active thread
// percentage needs (percent 0: the daemon's default).
func (m *Manager) ClientEnv(key string, percent int) ([]string, error) {
	if percent < 0 || percent > 100 {
		return nil, fmt.Errorf("mps: percentage %d is outside 0..100", percent)
	}
	d, err := m.daemon(key)
	if err != nil {
		return nil, err
	}
	return d.ClientEnv(percent), nil
}

// Quit stops an instance's daemon.
func (m *Manager) Quit(ctx context.Context, key string) error {
	m.mu.Lock()
	d, ok := m.daemons[key]
	delete(m.daemons, key)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("mps: no daemon for instance %q", key)
	}
	if err := d.Quit(ctx); err != nil {
		return fmt.Errorf("instance %s: %w", key, err)
	}
	return nil
}

// QuitAll stops every daemon and reports the ones that failed to stop.
func (m *Manager) QuitAll(ctx context.Context) error {
	var errs []error
	for _, k := range m.Keys() {
		if err := m.Quit(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Keys are the instances with a daemon, sorted.
func (m *Manager) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.daemons))
}

func (m *Manager) daemon(key string) (*Daemon, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.daemons[key]
	if !ok {
		return nil, fmt.Errorf("mps: no daemon for instance %q", key)
	}
	return d, nil
}

// ControlLog returns the daemon's control log (what clients and servers
// it saw), for checks and debugging.
func (d *Daemon) ControlLog() (string, error) {
	b, err := os.ReadFile(filepath.Join(d.LogDir, "control.log"))
	if err != nil {
		return "", fmt.Errorf("mps: %w", err)
	}
	return string(b), nil
}
