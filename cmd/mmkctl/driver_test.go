package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDriverWarning: without an NVIDIA driver, no mmkctl command
// warns of it: those that need no GPU never look for one, and those
// that read the GPUs (gpus, mig export, mig profiles --index) name the
// fake backend where their output says which backend it read, as the
// gpus table does (issue 37, item 7). mmkd still logs it at its start.
func TestNoDriverWarning(t *testing.T) {
	// A library that is not there: no driver, wherever the test runs.
	t.Setenv("MMK_GPU_NVML_LIBRARY", filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"mig layouts", []string{"mig", "layouts", "--gpu", "H100-80GB", "--maximal"}, "maximal layouts"},
		{"mig plan", []string{"mig", "plan", "--gpu", "H100-80GB", "--from", "7g.80gb@0", "--to", "3g.40gb+3g.40gb"}, "steps"},
		{"mig profiles of a model", []string{"mig", "profiles", "--gpu", "H100-80GB"}, "built-in table"},
		{"sim kernels", []string{"sim", "kernels", "--duration", "100ms", "--task", "hp:resnet50_infer_bs1:0", "--policy", "fifo"}, "fifo"},
		{"gpus", []string{"gpus"}, "(fake backend)"},
		{"gpus as JSON", []string{"gpus", "-o", "json"}, `"uuid"`},
		{"mig export", []string{"mig", "export"}, "mig-configs"},
		{"mig profiles of a GPU", []string{"mig", "profiles", "--index", "0"}, "read through fake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := mmkctlStderr(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
			if strings.Contains(stderr, "NVIDIA driver") {
				t.Errorf("stderr warns of the driver: %q", stderr)
			}
		})
	}
}
