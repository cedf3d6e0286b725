// Package configs holds mmk's configuration: the defaults that ship in the
// binaries (mmk.yaml, embedded), and Load, which layers a configuration
// file, MMK_* environment variables and command-line flags over them with
// viper, in that order of precedence, and validates the result. Unknown
// keys and bad values are errors that name the key.
package configs

import (
	_ "embed"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

//go:embed mmk.yaml
var defaultYAML []byte

// Config is mmk's whole configuration.
type Config struct {
	Log    LogConfig    `mapstructure:"log"`
	GPU    GPUConfig    `mapstructure:"gpu"`
	Server ServerConfig `mapstructure:"server"`
}

// LogConfig configures log/slog.
type LogConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// GPUConfig selects the GPU backend.
type GPUConfig struct {
	Backend     string     `mapstructure:"backend"`
	NVMLLibrary string     `mapstructure:"nvml_library"`
	Fake        FakeConfig `mapstructure:"fake"`
}

// FakeConfig describes the fake backend's GPUs.
type FakeConfig struct {
	Seed uint64            `mapstructure:"seed"`
	GPUs []fakegpu.GPUSpec `mapstructure:"gpus"`
}

// ServerConfig configures mmkd's HTTP server.
type ServerConfig struct {
	Listen string `mapstructure:"listen"`
}

// FieldError is a bad configuration value; Key is its dotted key.
type FieldError struct {
	Key    string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("config key %s: %q %s", e.Key, fmt.Sprint(e.Value), e.Reason)
}

func oneOf(key, value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return &FieldError{Key: key, Value: value, Reason: "is not one of " + strings.Join(allowed, ", ")}
}

// Validate checks every value and returns the first bad one as a
// *FieldError.
func (c *Config) Validate() error {
	checks := []error{
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "text", "json"),
		oneOf("gpu.backend", c.GPU.Backend, "auto", "nvml", "fake"),
		validListen(c.Server.Listen),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	for i, g := range c.GPU.Fake.GPUs {
		key := fmt.Sprintf("gpu.fake.gpus[%d]", i)
		m, err := partitioner.LookupModel(g.Model)
		if err != nil {
			return &FieldError{Key: key + ".model", Value: g.Model, Reason: "is not a known model (" + strings.Join(partitioner.ModelKeys(), ", ") + ")"}
		}
		l, err := partitioner.ParseLayout(m, g.Layout)
		if err != nil {
			return &FieldError{Key: key + ".layout", Value: g.Layout, Reason: "is not a layout of " + m.Key + ": " + err.Error()}
		}
		if len(l.Instances) > 0 && !g.MIG {
			return &FieldError{Key: key + ".layout", Value: g.Layout, Reason: "needs mig: true"}
		}
	}
	return nil
}

func validListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		if n, err = strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port %d is out of range", n)
		}
	}
	if err != nil {
		return &FieldError{Key: "server.listen", Value: addr, Reason: "is not host:port: " + err.Error()}
	}
	return nil
}

// SlogLevel returns the configured level.
func (c LogConfig) SlogLevel() slog.Level {
	switch c.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
