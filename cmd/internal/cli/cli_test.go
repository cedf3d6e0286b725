package cli

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/configs"
	"github.com/spf13/pflag"
)

func TestFlagsSetConfigKeys(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("listen", "", "")
	f := AddConfigFlags(fs, map[string]string{"server.listen": "listen"})
	if err := fs.Parse([]string{"--backend", "fake", "--listen", "127.0.0.1:9", "--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.GPU.Backend != "fake" || c.Server.Listen != "127.0.0.1:9" || c.Log.Format != "json" || c.Log.Level != "info" {
		t.Errorf("config %+v", c)
	}
	b, err := OpenBackend(c, c.Log.NewLogger(io.Discard))
	if err != nil || b.Name() != "fake" {
		t.Fatalf("backend: %v", err)
	}
	b.Close()
}

func TestUndefinedFlagIsAnError(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := AddConfigFlags(fs, map[string]string{"server.listen": "listen"})
	if _, err := f.Load(); err == nil || !strings.Contains(err.Error(), "flag --listen for server.listen is not defined") {
		t.Errorf("error = %v", err)
	}
}

// TestOpenBackendDevices: gpu.devices from the environment restricts the
// backend mmkd and mmkctl open (the embedded default's three fake GPUs);
// a device the node lacks stops it, naming the key and the device.
func TestOpenBackendDevices(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want []int
		err  string
	}{
		{"MMK_GPU_DEVICES=2", []int{2}, ""},
		{"MMK_GPU_DEVICES=0,1", []int{0, 1}, ""},
		{"MMK_GPU_DEVICES=9", nil, `gpu.devices: "9" is not a GPU`},
	} {
		c, err := configs.Load(configs.Options{Environ: []string{"MMK_GPU_BACKEND=fake", tc.env}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := OpenBackend(c, slog.New(slog.DiscardHandler))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.env, err)
		}
		gpus, err := b.GPUs()
		b.Close()
		var got []int
		for _, g := range gpus {
			got = append(got, g.Index)
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: GPUs %v (%v), want %v", tc.env, got, err, tc.want)
		}
	}
}
