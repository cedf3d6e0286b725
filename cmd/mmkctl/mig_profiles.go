package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/partitioner"
)

type profilesFlags struct {
	gpu   string
	index int
	check bool
	// config chooses the GPU backend that --index reads.
	config *cli.Flags
}

// profilesResult is the JSON form of mig profiles.
type profilesResult struct {
	// Source is "built-in", or the backend the geometry was read through.
	Source string             `json:"source"`
	GPU    *int               `json:"gpu,omitempty"`
	Model  *partitioner.Model `json:"model"`
	// Builtin is the built-in model compared with, when read from a GPU.
	Builtin     string   `json:"builtin,omitempty"`
	Differences []string `json:"differences,omitempty"`
}

func newProfilesCommand(a *app) *cobra.Command {
	f := &profilesFlags{}
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the GPU instance profiles of a model, or read them from a GPU",
		Long: "With --gpu MODEL, print mmk's built-in profile table of that model. Without it,\n" +
			"read the profiles from GPU --index through the backend (NVML on a GPU node) and\n" +
			"compare them with the built-in table of the GPU's model; --check makes a\n" +
			"difference an error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := f.run(a, cmd)
			if err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				err = p.JSON(res)
			} else {
				err = printProfiles(p, res)
			}
			if err == nil && f.check && len(res.Differences) > 0 {
				err = fmt.Errorf("GPU %d differs from the built-in %s table in %d places", *res.GPU, res.Builtin, len(res.Differences))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&f.gpu, "gpu", "", gpuFlagHelp+" (built-in table); omit to read a GPU")
	cmd.Flags().IntVar(&f.index, "index", 0, "GPU to read when --gpu is not given")
	cmd.Flags().BoolVar(&f.check, "check", false, "fail when the GPU's profiles differ from the built-in table")
	f.config = addBackendFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

func (f *profilesFlags) run(a *app, cmd *cobra.Command) (*profilesResult, error) {
	if f.gpu != "" && cmd.Flags().Changed("index") {
		return nil, fmt.Errorf("flag --index reads a GPU, flag --gpu the built-in table: give one of them")
	}
	if f.gpu != "" {
		m, err := partitioner.LookupModel(f.gpu)
		if err != nil {
			return nil, fmt.Errorf("flag --gpu: %w", err)
		}
		return &profilesResult{Source: "built-in", Model: m}, nil
	}
	b, err := openBackend(f.config)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	m, err := b.Model(f.index)
	if err != nil {
		return nil, err
	}
	res := &profilesResult{Source: b.Name(), GPU: &f.index, Model: m}
	if builtin, err := partitioner.LookupModel(m.Key); err == nil {
		res.Builtin = builtin.Key
		res.Differences = builtin.Diff(m)
	}
	return res, nil
}

func printProfiles(p printer, res *profilesResult) error {
	m := res.Model
	if res.GPU != nil {
		p.Line("GPU %d (%s), read through %s:", *res.GPU, m.Key, res.Source)
	} else {
		p.Line("%s, built-in table:", m.Key)
	}
	rows := make([][]string, len(m.Profiles))
	for i, pr := range m.Profiles {
		rows[i] = []string{pr.Name, strconv.Itoa(pr.ID), strconv.Itoa(pr.MaxCount), strconv.Itoa(pr.ComputeSlices),
			strconv.Itoa(pr.MemorySlices), fmt.Sprintf("%.2f GiB (%d MiB)", float64(pr.MemoryMiB)/1024, pr.MemoryMiB),
			strconv.Itoa(pr.SMs), placements(pr)}
	}
	if err := p.Table("", []string{"PROFILE", "ID", "MAX", "COMPUTE", "MEM SLICES", "MEMORY", "SMS", "PLACEMENTS"}, rows); err != nil {
		return err
	}
	switch {
	case res.GPU == nil:
	case res.Builtin == "":
		p.Line("mmk has no built-in table for this GPU; it plans with the geometry read above.")
	case len(res.Differences) == 0:
		p.Line("matches the built-in %s table", res.Builtin)
	default:
		p.Line("differs from the built-in %s table:\n  %s", res.Builtin, strings.Join(res.Differences, "\n  "))
	}
	return nil
}

// placements formats a profile's placements as nvidia-smi mig -lgipp does.
func placements(p partitioner.Profile) string {
	s := make([]string, len(p.Placements))
	for i, x := range p.Placements {
		s[i] = strconv.Itoa(x)
	}
	return fmt.Sprintf("{%s}:%d", strings.Join(s, ","), p.MemorySlices)
}
