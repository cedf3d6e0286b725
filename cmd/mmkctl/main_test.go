package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mmkctl runs the command line in-process and returns stdout and the error.
func mmkctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := mmkctlStderr(t, args...)
	return out, err
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"gpus on the fake", []string{"gpus", "--backend", "fake"},
			[]string{"NVIDIA H100 80GB HBM3", "4g.40gb@0+2g.20gb@4+1g.10gb@6", "GPU 1 instances:", "3 GPUs (fake backend)"}, ""},
		{"built-in profiles", []string{"mig", "profiles", "--gpu", "A100-40GB"},
			[]string{"A100-40GB, built-in table:", "1g.5gb+me", "39.25 GiB (40192 MiB)  98   {0}:8"}, ""},
		{"profiles read from a GPU", []string{"mig", "profiles", "--backend", "fake", "--index", "2", "--check"},
			[]string{"GPU 2 (H200-141GB), read through fake:", "matches the built-in H200-141GB table"}, ""},
		{"maximal layouts", []string{"mig", "layouts", "--gpu", "H200-141GB", "--maximal"},
			[]string{"7g.141gb@0 ", "78 maximal layouts of H200-141GB with 1g.18gb,1g.35gb,2g.35gb,3g.71gb,4g.71gb,7g.141gb"}, ""},
		{"all layouts of chosen profiles", []string{"mig", "layouts", "--gpu", "A100-40GB", "--profiles", "3g.20gb,4g.20gb"},
			[]string{"4g.20gb@0+3g.20gb@4", "5 valid layouts"}, ""},
		{"plan", []string{"mig", "plan", "--gpu", "H100-80GB", "--from", "7g.80gb@0", "--to", "3g.40gb+3g.40gb"},
			[]string{"7g.80gb@0 -> 3g.40gb@0+3g.40gb@4: 6 steps", "1     destroy the compute instance of GPU instance 7g.80gb@0", "must be idle first: 7g.80gb@0"}, ""},
		{"plan from an empty GPU", []string{"mig", "plan", "--gpu", "H100-80GB", "--from", "", "--to", "7g.80gb"},
			[]string{"(no instances) -> 7g.80gb@0: 2 steps", "kept untouched: none"}, ""},
		{"bad output", []string{"gpus", "-o", "xml"}, nil, `flag -o/--output: "xml" is not one of table, wide, json, yaml`},
		{"bad model", []string{"mig", "layouts", "--gpu", "V100"}, nil, `flag --gpu: unknown GPU model "V100"`},
		{"missing model", []string{"mig", "layouts"}, nil, "flag --gpu is required"},
		{"bad profile", []string{"mig", "layouts", "--gpu", "H100-80GB", "--profiles", "3g.40gb,5g.50gb"}, nil, `flag --profiles: no profile "5g.50gb"`},
		{"bad layout", []string{"mig", "plan", "--gpu", "H100-80GB", "--from", "3g.40gb@1", "--to", ""}, nil, "flag --from: layout \"3g.40gb@1\": part 1"},
		{"missing target", []string{"mig", "plan", "--gpu", "H100-80GB", "--from", ""}, nil, "flag --to or --to-file is required"},
		{"bad backend", []string{"gpus", "--backend", "tpu"}, nil, `config key gpu.backend: "tpu" is not one of auto, nvml, fake`},
		{"table and GPU both", []string{"mig", "profiles", "--gpu", "H100-80GB", "--index", "1"}, nil, "give one of them"},
		{"missing GPU", []string{"mig", "profiles", "--backend", "fake", "--index", "9"}, nil, "GPU 9: get handle: NVML_ERROR_INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := mmkctl(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestLayoutsJSONCounts checks the acceptance counts through the JSON the
// issue specifies: 19 maximal layouts of the A100 base profiles, 78 of the
// default ones, for every model.
func TestLayoutsJSONCounts(t *testing.T) {
	base := map[string]string{
		"A100-40GB": "1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb", "A100-80GB": "1g.10gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb",
		"H100-80GB": "1g.10gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb", "H200-141GB": "1g.18gb,2g.35gb,3g.71gb,4g.71gb,7g.141gb",
	}
	for model, profiles := range base {
		for _, c := range []struct {
			args []string
			want int
		}{{[]string{"--profiles", profiles}, 19}, {nil, 78}} {
			out, err := mmkctl(t, append([]string{"mig", "layouts", "--gpu", model, "--maximal", "-o", "json"}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var layouts []struct {
				Layout    string `json:"layout"`
				Instances []struct {
					Profile     string `json:"profile"`
					Start, Size int
				} `json:"instances"`
			}
			if err := json.Unmarshal([]byte(out), &layouts); err != nil {
				t.Fatal(err)
			}
			if len(layouts) != c.want {
				t.Errorf("%s %v: %d layouts, want %d", model, c.args, len(layouts), c.want)
			}
			if l := layouts[0]; len(l.Instances) != 1 || l.Instances[0].Size != 8 || !strings.HasPrefix(l.Layout, "7g.") {
				t.Errorf("%s: first layout %+v", model, l)
			}
		}
	}
}

func TestConfigFileSetsFakeGPUs(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mmk.yaml")
	body := "gpu:\n  backend: fake\n  fake:\n    gpus:\n      - {model: A100-40GB, mig: true, layout: 3g.20gb+3g.20gb}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := mmkctl(t, "gpus", "--config", cfg, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var gpus []map[string]any
	if err := json.Unmarshal([]byte(out), &gpus); err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 1 || gpus[0]["layout"] != "3g.20gb@0+3g.20gb@4" || gpus[0]["model"] != "A100-40GB" {
		t.Errorf("gpus from the config file: %s", out)
	}
}
