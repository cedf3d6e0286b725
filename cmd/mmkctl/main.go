// Command mmkctl is mmk's command-line tool: it shows the node's GPUs and
// their MIG instances, lists MIG profiles and every valid layout of a GPU
// model, and plans reconfigurations between layouts. Through mmkd's API
// (its Unix socket by default, where mmkd knows the caller by its user;
// or TCP with --addr or MMK_ADDR and the token) it submits, lists,
// follows and cancels jobs and shows the node's placement. Every command
// takes -o table|wide|json.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/buildinfo"
	"github.com/mmkgpu/mmk/internal/cli"
	"github.com/mmkgpu/mmk/partitioner"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mmkctl:", err)
		os.Exit(1)
	}
}

// app is what every subcommand shares: configuration flags and output.
type app struct {
	flags  *cli.Flags
	output string
}

func newRootCommand() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "mmkctl",
		Short:         "Run jobs on mmk, inspect GPUs and plan MIG layouts",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch a.output {
			case "table", "wide", "json", "yaml":
			default:
				return fmt.Errorf("flag -o/--output: %q is not one of table, wide, json, yaml", a.output)
			}
			return nil
		},
	}
	// --data-dir says where mmkd's socket and token are (as mmkd's does).
	root.PersistentFlags().String("data-dir", "", "mmkd's data directory, for its Unix socket and token (data_dir; default /var/lib/mmk for root, else ~/.local/state/mmk, then /var/lib/mmk)")
	a.flags = cli.AddConfigFlags(root.PersistentFlags(), map[string]string{"data_dir": "data-dir"})
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "table", "output format: table, wide (a table with more columns where a command has them: jobs), json or yaml (the JSON's keys)")
	root.AddCommand(newGPUsCommand(a), newMIGCommand(a), newSimCommand(a), newProfileCommand(a), newPredictorCommand(a), newKernelschedCommand(), newRunCommand())
	root.AddCommand(newSubmitCommand(a), newJobsCommand(a), newJobCommand(a), newLogsCommand(a), newCancelCommand(a), newNodePlanCommand(a))
	return root
}

// openBackend loads the configuration with the command's flags and opens
// the GPU backend it selects. Where gpu.backend is auto and no NVIDIA
// driver is installed that is the fake, without a warning (mmkd logs one
// at its start): the commands that read GPUs say which backend they read
// (gpus' table, mig profiles --index), --backend nvml insists on real
// GPUs, and a command that needs one (profile) fails on the fake's.
func (a *app) openBackend() (partitioner.Backend, error) {
	cfg, err := a.flags.Load()
	if err != nil {
		return nil, err
	}
	return cli.OpenBackend(cfg, nil)
}

// printer writes the command's result in the chosen format.
func (a *app) printer(cmd *cobra.Command) printer {
	return printer{w: cmd.OutOrStdout(), json: a.output == "json" || a.output == "yaml", yaml: a.output == "yaml", wide: a.output == "wide"}
}
