package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/partitioner"
)

type exportFlags struct {
	name, out string
	config    *cli.Flags
}

func newExportCommand(a *app) *cobra.Command {
	f := &exportFlags{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the GPUs' MIG layouts as a mig-parted configuration",
		Long: "Read the node's GPUs through the backend (NVML on a GPU node, else the fake GPUs)\n" +
			"and write their MIG modes and instances as one configuration of NVIDIA\n" +
			"mig-parted's file format (version: v1, mig-configs), which nvidia-mig-parted,\n" +
			"the GPU operator's MIG manager, mmkctl mig plan --from-file/--to-file and mmkd's\n" +
			"mig.parted_file read. GPUs alike share an entry. mig-parted's format has no\n" +
			"placements: readers put each instance at the first placement that fits.\n" +
			"-o json writes the same document as JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var data []byte
			err := withInventory(f.config, func(b partitioner.Backend, gpus []partitioner.GPUState) (err error) {
				data, err = exportParted(b, gpus, f.name)
				return err
			})
			if err != nil {
				return err
			}
			if a.output == "json" {
				var doc any
				if err := yaml.Unmarshal(data, &doc); err != nil {
					return fmt.Errorf("mig export: %w", err)
				}
				if data, err = json.MarshalIndent(doc, "", "  "); err != nil {
					return fmt.Errorf("mig export: %w", err)
				}
				data = append(data, '\n')
			}
			if f.out == "" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if err := atomicfile.Write(f.out, data); err != nil {
				return fmt.Errorf("flag --out: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote MIG configuration %q to %s\n", f.name, f.out)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.name, "name", "current", "name of the MIG configuration written")
	cmd.Flags().StringVar(&f.out, "out", "", "file to write (default: standard output)")
	f.config = addBackendFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

// exportParted writes the GPUs' MIG modes and layouts as the mig-parted
// configuration name.
func exportParted(b partitioner.Backend, gpus []partitioner.GPUState, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("flag --name: the configuration needs a name")
	}
	if len(gpus) == 0 {
		return nil, errors.New("mig export: the node has no GPU")
	}
	var ls []partitioner.GPULayout
	for _, g := range gpus {
		gl := partitioner.GPULayout{Index: g.Index, MIG: g.MIG.Supported && g.MIG.Current}
		if gl.MIG {
			m, err := b.Model(g.Index)
			if err != nil {
				return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
			}
			if gl.Layout, err = partitioner.LayoutOf(m, g.Instances); err != nil {
				return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
			}
		}
		ls = append(ls, gl)
	}
	spec := partitioner.PartedSpec{Configs: []partitioner.PartedConfig{partitioner.PartedConfigOf(name, ls)}}
	data, err := spec.Marshal()
	if err != nil {
		return nil, err
	}
	// What mmk writes must read back.
	if _, err := partitioner.ParseParted(data); err != nil {
		return nil, fmt.Errorf("mig export wrote a file it cannot read: %w", err)
	}
	return data, nil
}
