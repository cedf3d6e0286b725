package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/partitioner"
)

func newGPUsCommand(a *app) *cobra.Command {
	var config *cli.Flags
	cmd := &cobra.Command{
		Use:   "gpus",
		Short: "List the node's GPUs and their MIG instances",
		Long: "List the node's GPUs with memory, SMs and MIG mode, and each GPU's MIG instances.\n" +
			"Reads real GPUs through NVML when a driver is installed, the fake GPUs of the\n" +
			"configuration otherwise (--backend nvml|fake chooses).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withInventory(config, func(b partitioner.Backend, gpus []partitioner.GPUState) error {
				p := a.printer(cmd)
				if p.json {
					return p.JSON(gpus)
				}
				return printGPUs(p, b.Name(), gpus)
			})
		},
	}
	config = addBackendFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

// withInventory opens the backend the configuration (config: the
// command's flags) selects, reads its GPUs with their instances and calls
// f while the backend is open.
func withInventory(config *cli.Flags, f func(partitioner.Backend, []partitioner.GPUState) error) error {
	b, err := openBackend(config)
	if err != nil {
		return err
	}
	defer b.Close()
	gpus, err := partitioner.ReadInventory(b)
	if err != nil {
		return err
	}
	return f(b, gpus)
}

func printGPUs(p printer, backend string, gpus []partitioner.GPUState) error {
	rows := make([][]string, len(gpus))
	for i, g := range gpus {
		rows[i] = []string{strconv.Itoa(g.Index), g.Name, orDash(g.Model), mib(g.MemoryMiB), strconv.Itoa(g.SMs), g.MIG.String(), orDash(g.Layout), g.UUID}
	}
	if err := p.Table("", []string{"GPU", "NAME", "MODEL", "MEMORY", "SMS", "MIG", "LAYOUT", "UUID"}, rows); err != nil {
		return err
	}
	for _, g := range gpus {
		if len(g.Instances) == 0 {
			continue
		}
		p.Line("\nGPU %d instances:", g.Index)
		var rows [][]string
		for _, gi := range g.Instances {
			pids := []string{}
			for _, pr := range gi.Processes() {
				pids = append(pids, strconv.Itoa(pr.PID))
			}
			rows = append(rows, []string{gi.Name, gi.Profile, fmt.Sprintf("%d:%d", gi.Start, gi.Size),
				strconv.Itoa(gi.SMs), mib(gi.MemoryMiB), orDash(gi.UUID()), orDash(strings.Join(pids, ","))})
		}
		if err := p.Table("  ", []string{"INSTANCE", "PROFILE", "PLACEMENT", "SMS", "MEMORY", "MIG DEVICE", "PROCESSES"}, rows); err != nil {
			return err
		}
	}
	p.Line("\n%d GPUs (%s backend)", len(gpus), backend)
	return nil
}
