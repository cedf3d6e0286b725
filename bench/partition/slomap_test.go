package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestTightCell: a tight cell's description says how many points
// mps-prio leaves to gain where they are fewer than the margin asks, and
// nothing more where they are not.
func TestTightCell(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m, o   float64
		want   string
		reason bool
	}{
		{"no room", 0.9896, 0.9846, "p99=1.25x at 0.5 (JCT 1.04x, +0.5 points; mps-prio keeps 98.46 % in time, so at most +1.5 points are left to gain)", true},
		{"room", 0.80, 0.60, "p99=1.25x at 0.5 (JCT 1.04x, +20.0 points)", false},
		{"just enough room", 0.90, 0.85, "p99=1.25x at 0.5 (JCT 1.04x, +5.0 points)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tightCell("p99=1.25x at 0.5", 1.04, tc.m, tc.o)
			if got != tc.want {
				t.Errorf("tightCell = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "left to gain") != tc.reason {
				t.Errorf("reason given: %v, want %v", !tc.reason, tc.reason)
			}
		})
	}
}

// TestMIGERCell: a cell against MIGER says how far mps-prio's JCT is from
// MIGER's where it, too, misses the JCT margin, and nothing more where it
// does not.
func TestMIGERCell(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jr, or float64
		want   string
		reason bool
	}{
		{"mps-prio slow too", 0.72, 0.68, "p99=1.5x at 1 (JCT 0.72x MIGER's, +42.9 points; mps-prio, isolating nothing, runs at 0.68x MIGER's JCT)", true},
		{"mps-prio within, mmk past", 0.515, 0.50, "p99=1.5x at 1 (JCT 0.52x MIGER's, +42.9 points; mps-prio, isolating nothing, runs at 0.50x MIGER's JCT, and mmk's plan gains +0.6 points over it at 1.03x its JCT)", true},
		{"both within", 0.45, 0.40, "p99=1.5x at 1 (JCT 0.45x MIGER's, +42.9 points)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := migerCell("p99=1.5x at 1", tc.jr, tc.or, 0.979, 0.55, 0.973)
			if got != tc.want {
				t.Errorf("migerCell = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "isolating nothing") != tc.reason {
				t.Errorf("reason given: %v, want %v", !tc.reason, tc.reason)
			}
		})
	}
}

// TestCellTable: a table of the map's cells has a column per load and a
// row per target, each cell as asked (the three tables of a workload's
// section, once written three times over).
func TestCellTable(t *testing.T) {
	var b bytes.Buffer
	cellTable(&b, func(tight, load float64) string { return fmt.Sprintf("%g@%g", tight, load) })
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2+len(mapTights) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2+len(mapTights), b.String())
	}
	if want := "| target \\ load |" + strings.Repeat(" %g |", len(loads)); !strings.HasPrefix(lines[0], "| target \\ load | ") || strings.Count(lines[0], "|") != strings.Count(want, "|") {
		t.Errorf("header %q", lines[0])
	}
	if want := "|---|" + strings.Repeat("---|", len(loads)); lines[1] != want {
		t.Errorf("separator %q, want %q", lines[1], want)
	}
	row := fmt.Sprintf("| %s |", targetText(mapTights[0]))
	for _, l := range loads {
		row += fmt.Sprintf(" %g@%g |", mapTights[0], l)
	}
	if lines[2] != row {
		t.Errorf("first row %q, want %q", lines[2], row)
	}
}
