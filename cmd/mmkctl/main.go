// Command mmkctl is mmk's command-line tool: it shows the node's GPUs and
// their MIG instances, lists MIG profiles and every valid layout of a GPU
// model, and plans reconfigurations between layouts. Through mmkd's API
// (its Unix socket by default, where mmkd knows the caller by its user;
// or TCP with --addr or MMK_ADDR and the token) it submits, lists,
// follows and cancels jobs and shows the node's placement. Every command
// that prints a result takes -o table|wide|json|yaml; each takes only the
// flags it reads.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/buildinfo"
	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/partitioner"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mmkctl:", err)
		os.Exit(1)
	}
}

// app is what the subcommands share: the output format of those that
// take -o.
type app struct {
	output string
}

// newRootCommand is mmkctl. It has no flags of its own but --version:
// each subcommand takes the flags it reads (the configuration's only where
// it reads the configuration: addConfigFlags, addServerFlags; -o where it
// prints a result: addOutputFlag), so that its help lists only those
// (issue 37, item 7).
func newRootCommand() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "mmkctl",
		Short:         "Run jobs on mmk, inspect GPUs and plan MIG layouts",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Lookup("output") == nil {
				return nil
			}
			switch a.output {
			case "table", "wide", "json", "yaml":
			case "name":
				if !namesCommands[cmd.CommandPath()] {
					return fmt.Errorf("flag -o/--output: name (the jobs' ids, one a line) is for mmkctl jobs, job, submit and cancel")
				}
			default:
				return fmt.Errorf("flag -o/--output: %q is not one of table, wide, json, yaml, name", a.output)
			}
			return nil
		},
	}
	root.AddCommand(newGPUsCommand(a), newMIGCommand(a), newSimCommand(a), newProfileCommand(), newPredictorCommand(a), newKernelschedCommand(), newRunCommand())
	root.AddCommand(newSubmitCommand(a), newJobsCommand(a), newJobCommand(a), newLogsCommand(), newCancelCommand(a), newNodePlanCommand(a), newSLOCommand(a))
	return root
}

// addOutputFlag adds -o/--output to cmd, a command that prints a result.
func (a *app) addOutputFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&a.output, "output", "o", "table", "output format: table, wide (a table with more columns where a command has them: jobs), json, yaml (the JSON's keys) or name (the jobs' ids, one a line: jobs, job, submit, cancel)")
}

// namesCommands are the commands that print -o name: the jobs' ids.
var namesCommands = map[string]bool{"mmkctl jobs": true, "mmkctl job": true, "mmkctl submit": true, "mmkctl cancel": true}

// addBackendFlags adds to cmd, a command that reads the node's GPUs, the
// configuration flags that choose them: --config and --backend.
func addBackendFlags(cmd *cobra.Command) *cli.Flags {
	return cli.AddConfigFile(cmd.Flags(), nil).AddBackend()
}

// openBackend loads the configuration with the command's flags and opens
// the GPU backend it selects. Where gpu.backend is auto and no NVIDIA
// driver is installed that is the fake, without a warning (mmkd logs one
// at its start): the commands that read GPUs say which backend they read
// (gpus' table, mig profiles --index), --backend nvml insists on real
// GPUs, and a command that needs one (profile) fails on the fake's.
func openBackend(flags *cli.Flags) (partitioner.Backend, error) {
	cfg, err := flags.Load()
	if err != nil {
		return nil, err
	}
	return cli.OpenBackend(cfg, nil)
}

// printer writes the command's result in the chosen format.
func (a *app) printer(cmd *cobra.Command) printer {
	return printer{w: cmd.OutOrStdout(), json: a.output == "json" || a.output == "yaml", yaml: a.output == "yaml", wide: a.output == "wide", names: a.output == "name"}
}
