package slosuite

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

// BuiltinCalibration names the calibration built into mmk: the one the
// suite's scenarios are drawn from by default, measured on an H200 with
// bench/gpu/calibrate.sh (docs/results/calib-h200-2026-11-29).
const BuiltinCalibration = "calib-h200-2026-11-29.jsonl.gz"

//go:embed data/*.jsonl.gz
var builtin embed.FS

// Builtin is the built-in calibration (BuiltinCalibration).
func Builtin() (*Calibration, error) {
	b, err := builtin.ReadFile("data/" + BuiltinCalibration)
	if err != nil {
		return nil, fmt.Errorf("built-in calibration: %w", err)
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("built-in calibration: %w", err)
	}
	defer z.Close()
	return ReadCalibration(io.Reader(z))
}
