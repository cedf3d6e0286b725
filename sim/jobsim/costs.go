package jobsim

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// CheckpointCost is what a checkpoint costs a job type under mmk's
// checkpoint contract (docs/jobs.md): the save on SIGTERM and the restore
// on the next start, in seconds.
type CheckpointCost struct {
	SaveS    float64 `json:"save_s"`
	RestoreS float64 `json:"restore_s"`
	// CkptMiB is the checkpoint's size, for the record.
	CkptMiB float64 `json:"ckpt_mib,omitempty"`
}

// RestartCosts is the table of checkpoint costs per job type that
// bench/restartcost derives from bench/gpu/ckpt_cost.py's raw lines.
type RestartCosts struct {
	// Source names the raw lines; empty when nothing was measured yet.
	Source string `json:"source"`
	// GPU is the GPU they were measured on.
	GPU   string                    `json:"gpu,omitempty"`
	Types map[string]CheckpointCost `json:"types"`
}

// restartCostsJSON is the table bench/restartcost generated.
//
//go:embed data/restart-cost.json
var restartCostsJSON []byte

// BuiltinRestartCosts returns the built-in table of checkpoint costs.
func BuiltinRestartCosts() (RestartCosts, error) {
	var out RestartCosts
	dec := json.NewDecoder(bytes.NewReader(restartCostsJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return out, fmt.Errorf("restart cost table: %w", err)
	}
	for t, c := range out.Types {
		if c.SaveS < 0 || c.RestoreS < 0 {
			return out, fmt.Errorf("restart cost table: %s: save %v s, restore %v s: want >= 0", t, c.SaveS, c.RestoreS)
		}
	}
	return out, nil
}

// Costs are what moving jobs costs in the simulation.
type Costs struct {
	// MIGReconfig is the time a MIG change stops the instances it
	// destroys or creates (0: DefaultMIGReconfig).
	MIGReconfig time.Duration
	// Checkpoint is each job type's save and restore; a type not in it
	// saves and restores in no time.
	Checkpoint map[string]CheckpointCost
}

// DefaultMIGReconfig is Costs.MIGReconfig when unset: an assumption (mmk
// may not change MIG on the lent GPUs, so it is not measured here); the
// report shows 5, 30 and 60 s side by side.
const DefaultMIGReconfig = 5 * time.Second

// ckptLine is one JSON line of bench/gpu/ckpt_cost.py (the fields the
// table needs).
type ckptLine struct {
	// What is "process" (the GPU, once) or "job" (one job type).
	What string `json:"what"`
	GPU  string `json:"gpu"`
	// Job is the job type, CkptMiB its checkpoint's size.
	Job     string  `json:"job"`
	CkptMiB float64 `json:"ckpt_mib"`
	// SaveS and RestoreS are the repetitions, in seconds.
	SaveS    []float64 `json:"save_s"`
	RestoreS []float64 `json:"restore_s"`
	// Dry marks lines of a run without a GPU.
	Dry bool `json:"dry"`
}

// ReadCheckpointLines derives the table of checkpoint costs from the raw
// lines bench/gpu/ckpt_cost.py prints (a process line, then one line per
// job type with its saves and restores): per job type the median save
// and restore. Lines of a dry run (no GPU) are refused; a job type seen
// twice keeps its last line. source names the lines in the table.
func ReadCheckpointLines(r io.Reader, source string) (RestartCosts, error) {
	out := RestartCosts{Source: source, Types: map[string]CheckpointCost{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l ckptLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			return out, fmt.Errorf("checkpoint lines: line %d: %w", n, err)
		}
		if l.Dry {
			return out, fmt.Errorf("checkpoint lines: line %d comes from a dry run (ckpt_cost.py --dry), not a GPU", n)
		}
		switch l.What {
		case "process":
			out.GPU = l.GPU
		case "job":
			if l.Job == "" {
				return out, fmt.Errorf("checkpoint lines: line %d: job line without a job", n)
			}
			save, err := median(l.SaveS)
			if err != nil {
				return out, fmt.Errorf("checkpoint lines: line %d (%s): save_s: %w", n, l.Job, err)
			}
			restore, err := median(l.RestoreS)
			if err != nil {
				return out, fmt.Errorf("checkpoint lines: line %d (%s): restore_s: %w", n, l.Job, err)
			}
			if l.CkptMiB < 0 || math.IsNaN(l.CkptMiB) {
				return out, fmt.Errorf("checkpoint lines: line %d (%s): ckpt_mib %v: want >= 0", n, l.Job, l.CkptMiB)
			}
			out.Types[l.Job] = CheckpointCost{SaveS: save, RestoreS: restore, CkptMiB: l.CkptMiB}
		default:
			return out, fmt.Errorf("checkpoint lines: line %d: what %q is not process or job", n, l.What)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("checkpoint lines: %w", err)
	}
	if len(out.Types) == 0 {
		return out, errors.New("checkpoint lines: no job line")
	}
	return out, nil
}

// median is the median of repetitions, each a finite number >= 0.
func median(xs []float64) (float64, error) {
	if len(xs) == 0 {
		return 0, errors.New("no repetition")
	}
	for _, x := range xs {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%v: want seconds >= 0", x)
		}
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return s[n/2-1]/2 + s[n/2]/2, nil
	}
	return s[len(s)/2], nil
}
