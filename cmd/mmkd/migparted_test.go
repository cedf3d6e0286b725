package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

const partedFile = `version: v1
mig-configs:
  sevens:
    - devices: [1]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - devices: [2]
      mig-enabled: true
      mig-devices: {}
  same:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 1
        "2g.20gb": 1
        "4g.40gb": 1
  twice:
    - devices: all
      mig-enabled: true
      mig-devices: {}
    - devices: [0]
      mig-enabled: true
      mig-devices: {}
`

// TestApplyParted: at start mmkd sets up mig.parted_config on the GPUs it
// matches when it manages MIG, leaves a GPU whose MIG mode differs, and
// whose replaced instances are busy, as they are; without mig.manage it
// only reports; two entries for one GPU stop the start.
func TestApplyParted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "parted.yaml")
	if err := os.WriteFile(file, []byte(partedFile), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config string
		manage, busy bool
		want         []string // each GPU's layout after
		log, err     string
	}{
		{"managed", "sevens", true, false, []string{"4g.40gb@0+2g.20gb@4+1g.10gb@6", "1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+1g.10gb@4+1g.10gb@5+1g.10gb@6", ""},
			"wants another MIG mode", ""},
		{"not managed", "sevens", false, false, []string{"4g.40gb@0+2g.20gb@4+1g.10gb@6", "3g.40gb@0+3g.40gb@4", ""}, "mig.manage is off", ""},
		{"busy", "sevens", true, true, []string{"4g.40gb@0+2g.20gb@4+1g.10gb@6", "3g.40gb@0+3g.40gb@4", ""}, "are in use", ""},
		{"held already", "same", true, false, []string{"4g.40gb@0+2g.20gb@4+1g.10gb@6", "3g.40gb@0+3g.40gb@4", ""}, "the GPU holds the configuration", ""},
		{"two entries", "twice", true, false, nil, "", "the entries on lines 19 and 22 both apply to GPU 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, f, err := nvmlbackend.OpenFake(1, []fakegpu.GPUSpec{
				{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+2g.20gb@4+1g.10gb@6"},
				{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4"},
				{Model: "H200-141GB"},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if tc.busy {
				insts, err := b.Instances(1)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.AttachProcess(1, insts[0].UUID(), 4242, 100); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := configs.Load(configs.Options{Environ: []string{
				"MMK_MIG_PARTED_FILE=" + file, "MMK_MIG_PARTED_CONFIG=" + tc.config, "MMK_MIG_MANAGE=" + map[bool]string{true: "true", false: "false"}[tc.manage]}})
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			err = applyParted(cfg, b, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gpus, err := partitioner.ReadInventory(b)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range gpus {
				if g.Layout != tc.want[i] {
					t.Errorf("GPU %d: %q, want %q", i, g.Layout, tc.want[i])
				}
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, logs.String())
			}
		})
	}
}

func TestPartedConfigKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "parted.yaml")
	if err := os.WriteFile(file, []byte(partedFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"MMK_MIG_PARTED_FILE=" + file}, `config key mig.parted_config: "" names no configuration of ` + file + ": the file has 3 MIG configurations"},
		{[]string{"MMK_MIG_PARTED_FILE=" + file, "MMK_MIG_PARTED_CONFIG=none"}, `no MIG configuration "none"`},
		{[]string{"MMK_MIG_PARTED_CONFIG=sevens"}, "config key mig.parted_config: \"sevens\" needs mig.parted_file"},
		{[]string{"MMK_MIG_PARTED_FILE=" + file + ".missing"}, "config key mig.parted_file"},
	} {
		if _, err := configs.Load(configs.Options{Environ: tc.env}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.env, err, tc.want)
		}
	}
}
