package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/cmd/internal/buildinfo"
)

// TestVersionFlag: mmkd --version prints the build's version and starts
// nothing.
func TestVersionFlag(t *testing.T) {
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), "mmkd version "+buildinfo.Version(); got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}
