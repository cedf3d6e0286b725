package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/partitioner"
)

type planFlags struct {
	gpu, from, to string
}

func newPlanCommand(a *app) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan the steps from one MIG layout to another",
		Long: "Print the fewest ordered steps (destroy compute instance, destroy GPU instance,\n" +
			"create GPU instance, create compute instance) that turn layout --from into\n" +
			"layout --to, which instances survive untouched, and which must be idle first.\n" +
			"Layouts are written like 3g.40gb@0+2g.20gb@4+1g.10gb@6; \"\" is a GPU with no\n" +
			"instances.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "gpu", "from", "to"); err != nil {
				return err
			}
			m, err := partitioner.LookupModel(f.gpu)
			if err != nil {
				return fmt.Errorf("flag --gpu: %w", err)
			}
			from, err := partitioner.ParseLayout(m, f.from)
			if err != nil {
				return fmt.Errorf("flag --from: %w", err)
			}
			to, err := partitioner.ParseLayout(m, f.to)
			if err != nil {
				return fmt.Errorf("flag --to: %w", err)
			}
			r, err := partitioner.PlanReconfiguration(m, partitioner.InstancesOf(from), to)
			if err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(r)
			}
			return printPlan(p, m, r)
		},
	}
	cmd.Flags().StringVar(&f.gpu, "gpu", "", gpuFlagHelp)
	cmd.Flags().StringVar(&f.from, "from", "", "current layout")
	cmd.Flags().StringVar(&f.to, "to", "", "target layout")
	return cmd
}

func printPlan(p printer, m *partitioner.Model, r *partitioner.Reconfiguration) error {
	p.Line("%s: %s -> %s: %d steps", m.Key, orEmpty(r.From.String()), orEmpty(r.To.String()), len(r.Steps))
	if len(r.Steps) > 0 {
		rows := make([][]string, len(r.Steps))
		for i, s := range r.Steps {
			rows[i] = []string{strconv.Itoa(i + 1), s.String()}
		}
		if err := p.Table("", []string{"STEP", "ACTION"}, rows); err != nil {
			return err
		}
	}
	p.Line("kept untouched: %s", instanceList(r.Kept))
	p.Line("must be idle first: %s", instanceList(r.MustBeIdle))
	return nil
}

func orEmpty(s string) string {
	if s == "" {
		return "(no instances)"
	}
	return s
}

func instanceList(gis []partitioner.GPUInstance) string {
	if len(gis) == 0 {
		return "none"
	}
	s := ""
	for i, gi := range gis {
		if i > 0 {
			s += ", "
		}
		s += gi.String()
	}
	return s
}
