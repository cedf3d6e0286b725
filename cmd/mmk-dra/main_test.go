package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/cmd/internal/buildinfo"
)

// TestRunRefusesBadFlags: each bad flag is refused, by name, before the
// driver starts anything.
func TestRunRefusesBadFlags(t *testing.T) {
	good := options{mmkd: "http://127.0.0.1:1", node: "n1", kubeconfig: filepath.Join(t.TempDir(), "missing"), cdiDir: t.TempDir(),
		defaultMemoryMiB: 4096, publishEvery: time.Second, grantWait: time.Second, logLevel: "info"}
	for _, tc := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"no node", func(o *options) { o.node = "" }, "--node-name"},
		{"bad log level", func(o *options) { o.logLevel = "loud" }, "--log-level"},
		{"no interval", func(o *options) { o.publishEvery = 0 }, "--publish-interval"},
		{"missing kubeconfig", func(*options) {}, "kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			if err := run(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestVersionFlag: mmk-dra --version prints the build's version, as mmkd
// and mmkctl do, and starts nothing (issue 37, item 9: the image's check
// runs it).
func TestVersionFlag(t *testing.T) {
	cmd := command()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), "mmk-dra version "+buildinfo.Version(); got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}
