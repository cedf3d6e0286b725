package jobsim

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
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
