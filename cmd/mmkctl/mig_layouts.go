package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/partitioner"
)

type layoutsFlags struct {
	gpu      string
	maximal  bool
	profiles []string
}

func newLayoutsCommand(a *app) *cobra.Command {
	f := &layoutsFlags{}
	cmd := &cobra.Command{
		Use:   "layouts",
		Short: "List every valid MIG layout of a GPU model",
		Long: "List every valid layout of a GPU model as concrete placements: no shared memory\n" +
			"slice, at most 7 compute slices, profile counts respected. --maximal keeps the\n" +
			"layouts to which nothing more fits. --profiles limits the profiles used\n" +
			"(default: all but the +me ones).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "gpu"); err != nil {
				return err
			}
			m, err := partitioner.LookupModel(f.gpu)
			if err != nil {
				return fmt.Errorf("flag --gpu: %w", err)
			}
			ps, err := m.SelectProfiles(f.profiles)
			if err != nil {
				return fmt.Errorf("flag --profiles: %w", err)
			}
			layouts := m.Layouts(ps)
			kind := "valid"
			if f.maximal {
				layouts, kind = m.MaximalLayouts(ps), "maximal"
			}
			p := a.printer(cmd)
			if p.json {
				if layouts == nil {
					layouts = []partitioner.Layout{}
				}
				return p.JSON(layouts)
			}
			rows := make([][]string, len(layouts))
			for i, l := range layouts {
				rows[i] = []string{l.String(), strconv.Itoa(len(l.Instances)),
					fmt.Sprintf("%d/%d", l.ComputeSlicesUsed(), partitioner.ComputeSlices),
					fmt.Sprintf("%d/%d", l.MemorySlicesUsed(), partitioner.MemorySlices)}
			}
			if err := p.Table("", []string{"LAYOUT", "INSTANCES", "COMPUTE", "MEMORY"}, rows); err != nil {
				return err
			}
			p.Line("%d %s layouts of %s with %s", len(layouts), kind, m.Key, profileNames(ps))
			return nil
		},
	}
	cmd.Flags().StringVar(&f.gpu, "gpu", "", gpuFlagHelp)
	cmd.Flags().BoolVar(&f.maximal, "maximal", false, "only layouts to which no instance can be added")
	cmd.Flags().StringSliceVar(&f.profiles, "profiles", nil, "profiles to use, comma-separated (default: all but +me)")
	a.addOutputFlag(cmd)
	return cmd
}

func profileNames(ps []*partitioner.Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ",")
}
