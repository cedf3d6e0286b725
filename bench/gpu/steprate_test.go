package gpu

import (
	"encoding/json"
	"math"
	"os/exec"
	"testing"
)

// TestStepRate: a trainer's speed in a window (bench/gpu/pareto.py's
// step_rate, which slo.py, calibrate.py and pareto.py use) counts the
// time it was stopped in the window. Before, slo.py took the span from
// the trainer's first step in the window to its last: a trainer
// suspended for 7 s of 10 read at full speed, and mmk's trainers under a
// suspending controller read 1.3-4.6x too fast (docs/results/slo-history.md).
func TestStepRate(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	const script = `
import json, sys
sys.path.insert(0, ".")
from pareto import step_rate
steady = [i * 0.1 for i in range(101)]                                      # 10 steps a second, 0-10 s
stopped = [i * 0.1 for i in range(41)] + [7 + i * 0.1 for i in range(31)]   # the same, stopped from 4 s to 7 s
late = [7 + i * 0.1 for i in range(31)]                                     # stopped until 7 s
print(json.dumps([step_rate(steady, 2, 8), step_rate(stopped, 0, 10), step_rate(late, 0, 10), step_rate([], 0, 10), step_rate(steady, 5, 5)]))
`
	out, err := exec.Command("python3", "-c", script).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got []float64
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	for i, tc := range []struct {
		name string
		want float64
	}{
		{"steady", 10},
		{"stopped 3 s of 10", 7.1},
		{"stopped until 7 s of 10", 3},
		{"no steps", 0},
		{"an empty window", 0},
	} {
		if math.Abs(got[i]-tc.want) > 1e-9 {
			t.Errorf("%s: %g steps a second, want %g", tc.name, got[i], tc.want)
		}
	}
}
