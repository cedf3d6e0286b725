package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/node"
)

func newSLOCommand(a *app) *cobra.Command {
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "slo",
		Short: "Show every online job against its latency target, and who is restrained for it",
		Long: "Lists each online job's latency target, its percentile now against the bound,\n" +
			"its requests late in the controller's window and its attainment since it\n" +
			"connected, with its standing; then each instance's rung (the restraint on its\n" +
			"offline jobs), its last decision with the numbers that made it, and the offline\n" +
			"jobs it stopped, lets run for their progress floor, may not reach (other users')\n" +
			"or cannot reach (no hook).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := server.client()
			if err != nil {
				return err
			}
			var v node.SLOView
			if err := c.get(cmd.Context(), "/api/v1/slo", nil, &v); err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(v)
			}
			return printSLO(p, v)
		},
	}
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

// printSLO prints the SLO view as two tables, the restraint of each
// instance in words, and each GPU's TPC masks.
func printSLO(p printer, v node.SLOView) error {
	defer printMasks(p, v.Masks)
	if len(v.Jobs) == 0 {
		p.Line("No online job has been measured.")
	} else {
		rows := make([][]string, 0, len(v.Jobs))
		for _, j := range v.Jobs {
			pct, _, _ := strings.Cut(j.Target, "=")
			now := "-"
			if j.RecentN > 0 {
				now = fmt.Sprintf("%s %s / %s", pct, msText(j.PctMs), boundText(j.BoundMs))
			}
			rows = append(rows, []string{j.ID, orDash(j.Name), orDash(j.Instance), j.Target, now,
				fmt.Sprintf("%d of %d", j.RecentLate, j.RecentN), fmt.Sprintf("%.1f%% of %d", 100*j.Attainment, j.Requests), string(j.State), orDash(j.Detail)})
		}
		if err := p.Table("", []string{"JOB", "NAME", "INSTANCE", "TARGET", "NOW", "LATE (WINDOW)", "WITHIN (SINCE START)", "STANDING", "DETAIL"}, rows); err != nil {
			return err
		}
	}
	if len(v.Instances) == 0 {
		return nil
	}
	p.Line("")
	rows := make([][]string, 0, len(v.Instances))
	for _, in := range v.Instances {
		rung := in.Rung
		if !in.Active {
			rung += " (controller off)"
		}
		last := "-"
		if d := in.LastDecision; d != nil {
			last = d.Time.Local().Format("15:04:05") + " " + d.Reason
			if d.Error != "" {
				last += " (not applied: " + d.Error + ")"
			}
		}
		rows = append(rows, []string{in.Instance, rung + " (" + strconv.Itoa(in.Level) + " of " + strconv.Itoa(len(in.Ladder)-1) + ")", last})
	}
	if err := p.Table("", []string{"INSTANCE", "RUNG", "LAST DECISION"}, rows); err != nil {
		return err
	}
	for _, in := range v.Instances {
		for _, r := range restraintWords(in) {
			p.Line("%s: %s", in.Instance, r)
		}
	}
	return nil
}

// printMasks says each GPU's TPC masks and the ladder its controllers
// climb: "gpu0: TPC masks on (mapped: 62 TPCs of 72 slots ...); ladder
// priority, tpcs=0.75, ...".
func printMasks(p printer, masks []node.MaskView) {
	if len(masks) > 0 {
		p.Line("")
	}
	for _, m := range masks {
		state := m.State
		if m.State == node.MasksMapping && m.Probes > 0 {
			state += fmt.Sprintf(", %d of %d probes", m.ProbesDone, m.Probes)
		}
		p.Line("%s: TPC masks %s (%s); ladder %s", m.GPU, state, m.Why, strings.Join(m.Ladder, ", "))
	}
}

// restraintWords says which offline jobs of an instance are restrained
// how, one line each kind ("" kinds left out).
func restraintWords(in node.InstanceSLO) []string {
	var out []string
	add := func(what string, ids []string) {
		if len(ids) > 0 {
			out = append(out, what+": "+strings.Join(ids, ", "))
		}
	}
	add("suspended", in.Suspended)
	add("running for its progress floor (slo.max_stop)", in.Unstopped)
	add("other users', reached by priority and guard only (slo.restrain_others)", in.Shielded)
	add("not restrainable, its hook never connected", in.Unrestrainable)
	return out
}

// msText is a latency in milliseconds, to about three digits.
func msText(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fms", ms)
}

// boundText is a bound in milliseconds; 0 is a ratio target still
// measuring its job alone.
func boundText(ms float64) string {
	if ms == 0 {
		return "(measuring alone)"
	}
	return msText(ms)
}
