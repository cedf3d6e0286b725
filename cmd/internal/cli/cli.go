// Package cli holds what the mmkd and mmkctl commands share: the flags
// that set configuration keys, loading the configuration with them, the
// logger, and opening the GPU backend the configuration selects.
package cli

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

// Flags are the configuration flags of a command.
type Flags struct {
	configFile string
	bound      map[string]string // config key -> flag name
	set        *pflag.FlagSet
}

// AddConfigFlags adds --config, --backend, --log-level and --log-format to
// fs; extra maps further config keys to flags the caller defined on fs.
func AddConfigFlags(fs *pflag.FlagSet, extra map[string]string) *Flags {
	return AddConfigFile(fs, extra).AddBackend().AddLog()
}

// AddConfigFile adds --config alone to fs, for a command that reads the
// configuration but has no GPU backend or log of its own; extra maps
// config keys to flags the caller defined on fs.
func AddConfigFile(fs *pflag.FlagSet, extra map[string]string) *Flags {
	f := &Flags{set: fs, bound: map[string]string{}}
	fs.StringVar(&f.configFile, "config", "", "YAML configuration file; overrides the embedded defaults")
	for key, name := range extra {
		f.bound[key] = name
	}
	return f
}

// AddBackend adds --backend (gpu.backend) to the flags' set.
func (f *Flags) AddBackend() *Flags {
	f.set.String("backend", "auto", "GPU backend: auto (NVML if a driver is installed, else fake), nvml or fake")
	f.bound["gpu.backend"] = "backend"
	return f
}

// AddLog adds --log-level (log.level) and --log-format (log.format) to
// the flags' set.
func (f *Flags) AddLog() *Flags {
	f.set.String("log-level", "info", "log level: debug, info, warn or error")
	f.set.String("log-format", "text", "log format: text or json")
	f.bound["log.level"] = "log-level"
	f.bound["log.format"] = "log-format"
	return f
}

// Load reads the configuration: defaults, --config, MMK_* variables, flags.
func (f *Flags) Load() (*configs.Config, error) {
	flags := map[string]*pflag.Flag{}
	for key, name := range f.bound {
		fl := f.set.Lookup(name)
		if fl == nil {
			return nil, fmt.Errorf("flag --%s for %s is not defined", name, key)
		}
		flags[key] = fl
	}
	return configs.Load(configs.Options{File: f.configFile, Flags: flags, Environ: os.Environ()})
}

// OpenBackend opens the GPU backend the configuration selects; log gets
// the warning that auto chose the fake (no NVIDIA driver), nil drops it.
func OpenBackend(c *configs.Config, log *slog.Logger) (partitioner.Backend, error) {
	b, err := nvmlbackend.Open(nvmlbackend.Options{
		Kind: c.GPU.Backend, Library: c.GPU.NVMLLibrary,
		FakeSeed: c.GPU.Fake.Seed, FakeGPUs: c.GPU.Fake.GPUs, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("open GPU backend: %w", err)
	}
	m, err := partitioner.Devices(b, c.GPU.Devices)
	if err != nil {
		b.Close()
		return nil, err
	}
	return m, nil
}
