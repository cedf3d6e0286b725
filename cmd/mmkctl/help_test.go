package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// sharedFlags are the flags several commands take: the configuration
// (--config, --backend, --data-dir, --log-level, --log-format), mmkd's
// address and token, the output format, and the forest's --seed.
var sharedFlags = []string{"config", "backend", "data-dir", "log-level", "log-format", "addr", "token", "output", "seed"}

// helpFlag is a flag line of cobra's help: "  -o, --output string ...".
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)

// TestHelpShowsOwnFlags: each command's help lists the shared flags it
// takes and no other (issue 37, item 7: sim, predictor and mig listed
// mmkd's configuration flags, global flags of the root command, though
// they read no configuration; predictor compare listed a --seed it does
// not use).
func TestHelpShowsOwnFlags(t *testing.T) {
	server := []string{"config", "data-dir", "addr", "token", "output"}
	backend := []string{"config", "backend", "output"}
	want := map[string][]string{
		"mmkctl":            nil,
		"gpus":              backend,
		"mig":               nil,
		"mig profiles":      backend,
		"mig export":        backend,
		"mig layouts":       {"output"},
		"mig plan":          {"output"},
		"sim":               nil,
		"sim kernels":       {"output", "seed"},
		"sim jobs":          {"output", "seed"},
		"sim slo":           nil,
		"profile":           {"config", "backend", "seed"},
		"predictor":         nil,
		"predictor train":   {"seed"},
		"predictor eval":    {"output"},
		"predictor compare": {"output"},
		"predictor predict": {"output"},
		"kernelsched":       nil,
		"kernelsched serve": nil,
		"run":               nil,
		"submit":            server,
		"jobs":              server,
		"job":               server,
		"logs":              {"config", "data-dir", "addr", "token"},
		"cancel":            server,
		"plan":              server,
		"slo":               server,
	}
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "mmkctl ")
		seen[path] = true
		t.Run(path, func(t *testing.T) {
			exp, ok := want[path]
			if !ok {
				t.Fatalf("command %q: add it to the test's table", path)
			}
			args := append(strings.Fields(path), "--help")
			if path == "mmkctl" {
				args = []string{"--help"}
			}
			out, err := mmkctl(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "Global Flags:") {
				t.Errorf("help has global flags:\n%s", out)
			}
			var got []string
			for _, m := range helpFlag.FindAllStringSubmatch(out, -1) {
				if slices.Contains(sharedFlags, m[1]) {
					got = append(got, m[1])
				}
			}
			slices.Sort(got)
			exp = slices.Clone(exp)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Errorf("help lists the shared flags %v, want %v:\n%s", got, exp, out)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	for path := range want {
		if !seen[path] {
			t.Errorf("no command %q", path)
		}
	}
}
