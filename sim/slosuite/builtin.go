package slosuite

import (
	"embed"
	"fmt"
	"strings"
)

// BuiltinCalibrations name the calibration built into mmk, read in this
// order: the one the suite's scenarios are drawn from by default,
// measured on an H200 with bench/gpu/calibrate.sh
// (docs/results/calib-h200-2026-11-29), and the request-scoped masks
// measured beside the same mixes on another H200 the same day
// (docs/results/calib-h200-2026-11-29-req: its tpcs=F/req windows only,
// so that the first file's settings, and the scenarios drawn from them,
// are as they were).
var BuiltinCalibrations = []string{"calib-h200-2026-11-29.jsonl.gz", "calib-h200-2026-11-29-req.jsonl.gz"}

//go:embed data/*.jsonl.gz
var builtin embed.FS

// Builtin is the built-in calibration (BuiltinCalibrations).
func Builtin() (*Calibration, error) {
	var ws []calibWindow
	for _, name := range BuiltinCalibrations {
		f, err := builtin.Open("data/" + name)
		if err != nil {
			return nil, fmt.Errorf("built-in calibration: %w", err)
		}
		got, err := readCalib(name, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("built-in %w", err)
		}
		ws = append(ws, got...)
	}
	return buildCalibration(ws)
}

// BuiltinNames are the built-in calibration's files, for messages.
func BuiltinNames() string { return strings.Join(BuiltinCalibrations, ", ") }
