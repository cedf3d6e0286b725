package configs

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// EnvPrefix starts every environment variable mmk reads as configuration.
const EnvPrefix = "MMK_"

// Options says where Load finds the layers above the defaults.
type Options struct {
	// File is the path of a YAML configuration file (--config); "" for none.
	File string
	// Flags maps configuration keys to command-line flags; a flag counts
	// only when it was set on the command line.
	Flags map[string]*pflag.Flag
	// Environ is the environment, as os.Environ returns it.
	Environ []string
}

// EnvName returns the environment variable of a key: "gpu.nvml_library"
// is MMK_GPU_NVML_LIBRARY.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load builds the configuration: the embedded defaults, then the file,
// then MMK_* variables, then set flags, each overriding the one before,
// and validates it.
func Load(opts Options) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(defaultYAML)); err != nil {
		return nil, fmt.Errorf("embedded defaults: %w", err)
	}
	known := v.AllKeys()
	if opts.File != "" {
		if err := mergeFile(v, opts.File, known); err != nil {
			return nil, err
		}
	}
	if err := bindEnv(v, opts.Environ, known); err != nil {
		return nil, err
	}
	// Environment values went in with Set, viper's top layer, so flags
	// go in the same way, after them, to win.
	for key, f := range opts.Flags {
		if !slices.Contains(known, key) {
			return nil, fmt.Errorf("flag --%s is bound to unknown config key %s", f.Name, key)
		}
		if f.Changed {
			v.Set(key, f.Value.String())
		}
	}
	var c Config
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = true
	})
	if err != nil {
		// mapstructure lists its errors on lines of their own; one line reads better in a log.
		msg := strings.ReplaceAll(err.Error(), "decoding failed due to the following error(s):", "")
		return nil, fmt.Errorf("config: %s", strings.Join(strings.Fields(msg), " "))
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func mergeFile(v *viper.Viper, path string, known []string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	for _, key := range fv.AllKeys() {
		if slices.Contains(known, key) {
			continue
		}
		if slices.ContainsFunc(known, func(k string) bool { return strings.HasPrefix(k, key+".") }) {
			return fmt.Errorf("config file %s: key %s is a section, not a value", path, key)
		}
		return fmt.Errorf("config file %s: unknown key %s (known keys: %s)", path, key, strings.Join(sorted(known), ", "))
	}
	if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// bindEnv sets each key whose MMK_ variable is in environ. A variable that starts like
// a section of the configuration (MMK_GPU_...) but names no key is an
// error; other MMK_ variables (the job environment mmk sets) are not
// configuration and are left alone.
func bindEnv(v *viper.Viper, environ []string, known []string) error {
	byName := map[string]string{}
	sections := map[string]bool{}
	for _, key := range known {
		byName[EnvName(key)] = key
		sections[EnvName(strings.SplitN(key, ".", 2)[0])+"_"] = true
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		key, ok := byName[name]
		if !ok {
			for s := range sections {
				if strings.HasPrefix(name, s) {
					return fmt.Errorf("environment variable %s names no config key (known: %s)", name, strings.Join(sorted(envNames(known)), ", "))
				}
			}
			continue
		}
		v.Set(key, value)
	}
	return nil
}

func envNames(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = EnvName(k)
	}
	return out
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

// NewLogger returns a slog logger writing to w in the configured format
// and level.
func (c LogConfig) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.SlogLevel()}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// EnvNames returns the environment variable of every configuration key,
// sorted: what a caller clears to load the embedded defaults alone.
func EnvNames() ([]string, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(defaultYAML)); err != nil {
		return nil, fmt.Errorf("embedded defaults: %w", err)
	}
	return sorted(envNames(v.AllKeys())), nil
}
