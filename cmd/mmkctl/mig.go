package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/partitioner"
)

func newMIGCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mig",
		Short: "MIG profiles, layouts, reconfiguration plans and mig-parted configurations",
	}
	cmd.AddCommand(newProfilesCommand(a), newLayoutsCommand(a), newPlanCommand(a), newExportCommand(a))
	return cmd
}

// gpuFlagHelp documents --gpu for every mig subcommand.
var gpuFlagHelp = "GPU model: " + strings.Join(partitioner.ModelKeys(), ", ")

// requireFlags fails unless each named flag was given, naming the first
// missing one.
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			return fmt.Errorf("flag --%s is required", n)
		}
	}
	return nil
}
