package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// nodePlan is `mmkctl plan -o json`: the placement and the last
// reconfigurations.
type nodePlan struct {
	Plan      node.PlanView   `json:"plan"`
	Reconfigs []jobs.Reconfig `json:"reconfigs"`
	// restraints are the running offline jobs' restraint states, by id
	// (jobs.Restraint.State), for the table.
	restraints map[string]string
}

func newNodePlanCommand(a *app) *cobra.Command {
	var last int
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show mmkd's placement: GPUs, layouts, instances, jobs and their MPS shares",
		Long: "Shows how mmkd has cut each GPU (MIG layout), the instances, the jobs in each\n" +
			"with their MPS percentage, the jobs still waiting for a place, and the last\n" +
			"reconfigurations.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if last < 1 {
				return fmt.Errorf("flag --reconfigs: %d is not a positive count", last)
			}
			c, err := server.client()
			if err != nil {
				return err
			}
			var out nodePlan
			if err := c.get(cmd.Context(), "/api/v1/plan", nil, &out.Plan); err != nil {
				return err
			}
			if err := c.get(cmd.Context(), "/api/v1/reconfigs", url.Values{"limit": {strconv.Itoa(last)}}, &out.Reconfigs); err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(out)
			}
			// What restrains each running offline job, in its state.
			running, err := c.listJobs(cmd.Context(), url.Values{"state": {"running"}, "type": {"offline"}}, 0)
			if err != nil {
				return err
			}
			out.restraints = map[string]string{}
			for _, j := range running {
				if j.Restraint != nil {
					out.restraints[j.ID] = j.Restraint.State
				}
			}
			return printNodePlan(p, out)
		},
	}
	cmd.Flags().IntVar(&last, "reconfigs", 5, "how many of the last reconfigurations to show")
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

func printNodePlan(p printer, np nodePlan) error {
	pl := np.Plan
	if len(pl.GPUs) == 0 {
		p.Line("no GPUs in the plan")
	} else {
		rows := make([][]string, len(pl.GPUs))
		for i, g := range pl.GPUs {
			mig := "off"
			if g.MIG {
				mig = "on"
			}
			rows[i] = []string{strconv.Itoa(g.Index), orDash(g.Model), mig, orDash(g.Layout), strconv.Itoa(g.SMs), mib(g.MemoryMiB), strconv.Itoa(len(g.Instances))}
		}
		if err := p.Table("", []string{"GPU", "MODEL", "MIG", "LAYOUT", "SMS", "MEMORY", "INSTANCES"}, rows); err != nil {
			return err
		}
	}
	for _, g := range pl.GPUs {
		p.Line("\nGPU %d instances:", g.Index)
		var rows [][]string
		for _, in := range g.Instances {
			mps := "no"
			if in.MPS {
				mps = "yes"
			}
			slices := fmt.Sprintf("%d:%d", in.Start, in.Size)
			if !g.MIG {
				slices = "-"
			}
			head := []string{in.Name, orDash(in.Profile), slices, strconv.Itoa(in.SMs), mib(in.MemoryMiB), mps}
			if len(in.Jobs) == 0 {
				rows = append(rows, append(head, "-"))
			}
			for i, j := range in.Jobs {
				if i > 0 {
					head = []string{"", "", "", "", "", ""}
				}
				state := string(j.State)
				if r := np.restraints[j.ID]; r != "" {
					state += " (" + r + ")"
				}
				rows = append(rows, append(head, j.ID, j.Name, string(j.Kind), state, share(j.Percent), fmt.Sprintf("%.2f", j.Speed)))
			}
		}
		if err := p.Table("  ", []string{"INSTANCE", "PROFILE", "SLICES", "SMS", "MEMORY", "MPS", "JOB", "NAME", "TYPE", "STATE", "MPS %", "SPEED"}, rows); err != nil {
			return err
		}
	}
	if err := printWaiting(p, pl, time.Now()); err != nil {
		return err
	}
	p.Line("Predicted throughput %.2f, %d placement decisions", pl.Total, pl.Decisions)
	if len(np.Reconfigs) == 0 {
		p.Line("\nNo reconfigurations yet.")
		return nil
	}
	p.Line("\nLast reconfigurations:")
	rows := make([][]string, len(np.Reconfigs))
	for i, r := range np.Reconfigs {
		result := fmt.Sprintf("+%.2f", r.Gain)
		if r.Error != "" {
			result = "failed: " + r.Error
		}
		rows[i] = []string{strconv.Itoa(r.Seq), r.Time.Local().Format(time.DateTime), strconv.Itoa(r.GPU), orDash(r.From), orDash(r.To),
			strconv.Itoa(len(r.Restarted)), r.Duration.Round(time.Millisecond).String(), result, r.Cause}
	}
	return p.Table("  ", []string{"SEQ", "TIME", "GPU", "FROM", "TO", "RESTARTED", "TOOK", "GAIN", "CAUSE"}, rows)
}

// printWaiting lists the waiting jobs by name, each with what holds it
// and for how long, in the order they will be placed.
func printWaiting(p printer, pl node.PlanView, now time.Time) error {
	if pl.WaitingTotal == 0 && len(pl.Waiting) == 0 {
		p.Line("\nWaiting: none")
		return nil
	}
	p.Line("\nWaiting (%d):", max(pl.WaitingTotal, len(pl.Waiting)))
	why := make(map[string]node.WaitingView, len(pl.WaitingJobs))
	for _, w := range pl.WaitingJobs {
		why[w.ID] = w
	}
	rows := make([][]string, 0, len(pl.Waiting))
	for i, id := range pl.Waiting {
		w, ok := why[id]
		if !ok {
			rows = append(rows, []string{strconv.Itoa(i + 1), id, "-", "not looked at yet"})
			continue
		}
		name := id
		if w.Name != "" {
			name = w.Name + " (" + id + ")"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), name, age(now, w.Wait.Since), w.Wait.Reason})
	}
	if err := p.Table("  ", []string{"#", "JOB", "WAITING", "REASON"}, rows); err != nil {
		return err
	}
	if more := pl.WaitingTotal - len(pl.Waiting); more > 0 {
		p.Line("  and %d more", more)
	}
	return nil
}

// share is an MPS share as a column shows it: "-" where MPS is off.
func share(percent int) string {
	if percent == 0 {
		return "-"
	}
	return strconv.Itoa(percent) + "%"
}
