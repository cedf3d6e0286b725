package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/partitioner"
)

type planFlags struct {
	gpu, from, to string
	// The mig-parted files and configurations of each side, and the GPU
	// whose entry applies.
	fromFile, fromConfig, toFile, toConfig string
	index                                  int
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
			"instances. Either side may instead be a configuration of a mig-parted file\n" +
			"(--from-file F [--from-config NAME], --to-file ...): the entry that applies to\n" +
			"GPU --index of model --gpu, each instance at the first placement that fits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "gpu"); err != nil {
				return err
			}
			m, err := partitioner.LookupModel(f.gpu)
			if err != nil {
				return fmt.Errorf("flag --gpu: %w", err)
			}
			from, err := f.side(cmd, m, "from", f.from, f.fromFile, f.fromConfig)
			if err != nil {
				return err
			}
			to, err := f.side(cmd, m, "to", f.to, f.toFile, f.toConfig)
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&f.fromFile, "from-file", "", "mig-parted configuration file of the current layout (instead of --from)")
	cmd.Flags().StringVar(&f.fromConfig, "from-config", "", "configuration of --from-file (default: its only one)")
	cmd.Flags().StringVar(&f.toFile, "to-file", "", "mig-parted configuration file of the target layout (instead of --to)")
	cmd.Flags().StringVar(&f.toConfig, "to-config", "", "configuration of --to-file (default: its only one)")
	cmd.Flags().IntVar(&f.index, "index", 0, "GPU whose entry of a mig-parted file applies")
	a.addOutputFlag(cmd)
	return cmd
}

// side reads one side of the plan: layout text (--NAME), or the entry of
// a mig-parted file's configuration that applies to GPU --index.
func (f *planFlags) side(cmd *cobra.Command, m *partitioner.Model, name, text, file, config string) (partitioner.Layout, error) {
	switch {
	case cmd.Flags().Changed(name) && file != "":
		return partitioner.Layout{}, fmt.Errorf("flags --%s and --%s-file: give one of them", name, name)
	case file != "":
		spec, err := configs.ReadParted(file)
		if err != nil {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-file: %w", name, err)
		}
		c, err := spec.Select(config)
		if err != nil {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-config: %s: %w", name, file, err)
		}
		e, err := c.For(f.index, m.Key)
		if err != nil {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-file: %s: %w", name, file, err)
		}
		if e == nil {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-file: %s: no entry of MIG configuration %q applies to GPU %d (%s)", name, file, c.Name, f.index, m.Key)
		}
		if !e.MIGEnabled {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-file: %s: MIG configuration %q leaves MIG off on GPU %d (line %d): mmk plans between MIG layouts only", name, file, c.Name, f.index, e.Line)
		}
		l, err := e.Layout(m)
		if err != nil {
			return partitioner.Layout{}, fmt.Errorf("flag --%s-file: %s: MIG configuration %q: %w", name, file, c.Name, err)
		}
		return l, nil
	case config != "":
		return partitioner.Layout{}, fmt.Errorf("flag --%s-config needs --%s-file", name, name)
	case !cmd.Flags().Changed(name):
		return partitioner.Layout{}, fmt.Errorf("flag --%s or --%s-file is required", name, name)
	}
	l, err := partitioner.ParseLayout(m, text)
	if err != nil {
		return partitioner.Layout{}, fmt.Errorf("flag --%s: %w", name, err)
	}
	return l, nil
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
