package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunMPSPriority: mmkctl run gives the job its MPS client priority:
// the flag's, else the caller's environment's, else by kind.
func TestRunMPSPriority(t *testing.T) {
	hook := filepath.Join(t.TempDir(), "libmmkhook.so")
	if err := os.WriteFile(hook, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		flags   runFlags
		callers string
		want    string // "" : not set by mmkctl
		wantErr string
	}{
		{"offline", runFlags{mpsPriority: -1}, "", "CUDA_MPS_CLIENT_PRIORITY=1", ""},
		{"online", runFlags{mpsPriority: -1, online: true}, "", "CUDA_MPS_CLIENT_PRIORITY=0", ""},
		{"flag", runFlags{mpsPriority: 0}, "1", "CUDA_MPS_CLIENT_PRIORITY=0", ""},
		{"caller's", runFlags{mpsPriority: -1}, "0", "", ""},
		{"bad", runFlags{mpsPriority: 2}, "", "", "--mps-priority 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CUDA_MPS_CLIENT_PRIORITY", tc.callers)
			f := tc.flags
			f.hook = hook
			env, _, err := f.env()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			set := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CUDA_MPS_CLIENT_PRIORITY=") })
			switch {
			case tc.want == "" && set >= 0:
				t.Errorf("set %s over the caller's", env[set])
			case tc.want != "" && !slices.Contains(env, tc.want):
				t.Errorf("environment %v lacks %s", env, tc.want)
			}
		})
	}
}
