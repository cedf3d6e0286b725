package configs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMemoryLimitAndUsageKeys: the memory limit's mode and margins and the
// GPU use interval, their defaults and their checks.
func TestMemoryLimitAndUsageKeys(t *testing.T) {
	c, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MPS.MemoryLimit != "spec" || c.MPS.MemoryLimitMarginPct != 10 || c.MPS.MemoryLimitMarginMiB != 0 || c.Jobs.UsageInterval != time.Second {
		t.Errorf("defaults: %+v %v", c.MPS, c.Jobs.UsageInterval)
	}
	for _, tc := range []struct {
		env, key string
	}{
		{"MMK_MPS_MEMORY_LIMIT=some", "mps.memory_limit"},
		{"MMK_MPS_MEMORY_LIMIT_MARGIN_PCT=-5", "mps.memory_limit_margin_pct"},
		{"MMK_MPS_MEMORY_LIMIT_MARGIN_MIB=-1", "mps.memory_limit_margin_mib"},
		{"MMK_JOBS_USAGE_INTERVAL=-1s", "jobs.usage_interval"},
	} {
		var fe *FieldError
		if _, err := Load(Options{Environ: []string{tc.env}}); !errors.As(err, &fe) || fe.Key != tc.key {
			t.Errorf("%s: %v, want an error on %s", tc.env, err, tc.key)
		}
	}
	if c, err := Load(Options{Environ: []string{"MMK_MPS_MEMORY_LIMIT=all", "MMK_MPS_MEMORY_LIMIT_MARGIN_MIB=512", "MMK_JOBS_USAGE_INTERVAL=0"}}); err != nil ||
		c.MPS.MemoryLimit != "all" || c.MPS.MemoryLimitMarginMiB != 512 || c.Jobs.UsageInterval != 0 {
		t.Errorf("set: %+v %v", c, err)
	}
}

// TestPlacementSpread: placement.spread is on by default, can be turned
// off, and a value that is not a boolean is refused by its key.
func TestPlacementSpread(t *testing.T) {
	tests := []struct {
		env     []string
		want    bool
		wantErr bool
	}{
		{nil, true, false},
		{[]string{"MMK_PLACEMENT_SPREAD=false"}, false, false},
		{[]string{"MMK_PLACEMENT_SPREAD=sometimes"}, false, true},
	}
	for _, tc := range tests {
		c, err := Load(Options{Environ: tc.env})
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "placement.spread") {
				t.Errorf("%v: %v, want an error naming placement.spread", tc.env, err)
			}
			continue
		}
		if err != nil || c.Placement.Spread != tc.want {
			t.Errorf("%v: spread %v, %v; want %v", tc.env, c.Placement.Spread, err, tc.want)
		}
	}
}

// TestPlacementSLO: the SLO guard is on and a waiting job's need holds
// it a minute by default; a negative wait is refused by its key.
func TestPlacementSLO(t *testing.T) {
	c, err := Load(Options{})
	if err != nil || !c.Placement.SLOGuard || c.Placement.SLOMaxWait != time.Minute {
		t.Errorf("defaults: guard %v, wait %v, %v", c.Placement.SLOGuard, c.Placement.SLOMaxWait, err)
	}
	if c, err := Load(Options{Environ: []string{"MMK_PLACEMENT_SLO_GUARD=false", "MMK_PLACEMENT_SLO_MAX_WAIT=0s"}}); err != nil || c.Placement.SLOGuard || c.Placement.SLOMaxWait != 0 {
		t.Errorf("set: guard %v, wait %v, %v", c.Placement.SLOGuard, c.Placement.SLOMaxWait, err)
	}
	if _, err := Load(Options{Environ: []string{"MMK_PLACEMENT_SLO_MAX_WAIT=-1s"}}); err == nil || !strings.Contains(err.Error(), "placement.slo_max_wait") {
		t.Errorf("negative wait: %v, want an error naming placement.slo_max_wait", err)
	}
}

// TestPlacementMove: moves and reshares are off by default (move_after
// and reshare_after 0s) with a two-minute bound on their restart cost;
// each key set negative is refused by its name.
func TestPlacementMove(t *testing.T) {
	c, err := Load(Options{})
	if err != nil || c.Placement.MoveAfter != 0 || c.Placement.MoveMaxLost != 2*time.Minute || c.Placement.ReshareAfter != 0 {
		t.Errorf("defaults: after %v, max lost %v, reshare after %v, %v", c.Placement.MoveAfter, c.Placement.MoveMaxLost, c.Placement.ReshareAfter, err)
	}
	if c, err := Load(Options{Environ: []string{"MMK_PLACEMENT_RESHARE_AFTER=2m"}}); err != nil || c.Placement.ReshareAfter != 2*time.Minute {
		t.Errorf("reshare_after set: %v, %v", c.Placement.ReshareAfter, err)
	}
	if c, err := Load(Options{Environ: []string{"MMK_PLACEMENT_MOVE_AFTER=30s", "MMK_PLACEMENT_MOVE_MAX_LOST=5m"}}); err != nil || c.Placement.MoveAfter != 30*time.Second || c.Placement.MoveMaxLost != 5*time.Minute {
		t.Errorf("set: after %v, max lost %v, %v", c.Placement.MoveAfter, c.Placement.MoveMaxLost, err)
	}
	for _, key := range []string{"move_after", "move_max_lost", "reshare_after"} {
		env := "MMK_PLACEMENT_" + strings.ToUpper(key) + "=-1s"
		if _, err := Load(Options{Environ: []string{env}}); err == nil || !strings.Contains(err.Error(), "placement."+key) {
			t.Errorf("%s: %v, want an error naming placement.%s", env, err, key)
		}
	}
}
