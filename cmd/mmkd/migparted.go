package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/partitioner"
)

// applyParted sets up mig.parted_config of mig.parted_file on the GPUs
// its entries match, before the placement loop reads them: with
// mig.manage it creates and destroys instances (never one a process
// uses, and never changing a GPU's MIG mode, which mmk leaves to the
// operator); without, it logs each GPU that differs. A GPU holds its
// entry when it has the same instances, wherever they are placed
// (mig-parted's files give no placements).
func applyParted(c *configs.Config, b partitioner.Backend, log *slog.Logger) error {
	if c.MIG.PartedFile == "" {
		return nil
	}
	spec, err := configs.ReadParted(c.MIG.PartedFile)
	if err != nil {
		return fmt.Errorf("mig.parted_file: %w", err)
	}
	pc, err := spec.Select(c.MIG.PartedConfig)
	if err != nil {
		return fmt.Errorf("mig.parted_config: %w", err)
	}
	gpus, err := partitioner.ReadInventory(b)
	if err != nil {
		return err
	}
	for _, g := range gpus {
		lg := log.With("gpu", g.Index, "config", pc.Name, "file", c.MIG.PartedFile)
		e, err := pc.For(g.Index, g.Model)
		if err != nil {
			return fmt.Errorf("mig.parted_config: %w", err)
		}
		if e == nil {
			lg.Info("mig-parted: no entry of the configuration applies to this GPU", "model", g.Model)
			continue
		}
		on := g.MIG.Supported && g.MIG.Current
		if on != e.MIGEnabled {
			lg.Warn("mig-parted: the configuration wants another MIG mode; mmk never changes it (nvidia-smi -i N -mig 0|1, then reset the GPU)",
				"migEnabled", on, "want", e.MIGEnabled, "line", e.Line)
			continue
		}
		if !on {
			continue
		}
		m, err := b.Model(g.Index)
		if err != nil {
			return fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		target, err := e.Layout(m)
		if err != nil {
			return fmt.Errorf("mig.parted_config %q on GPU %d: %w", pc.Name, g.Index, err)
		}
		now, err := partitioner.LayoutOf(m, g.Instances)
		if err != nil {
			return fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		if now.Profiles() == target.Profiles() {
			lg.Info("mig-parted: the GPU holds the configuration", "layout", now.String())
			continue
		}
		if !c.MIG.Manage {
			lg.Warn("mig-parted: the GPU differs from the configuration; mig.manage is off, so it stays as it is",
				"layout", now.String(), "want", target.Profiles())
			continue
		}
		r, err := partitioner.PlanReconfiguration(m, g.Instances, target)
		if err != nil {
			return fmt.Errorf("mig.parted_config %q on GPU %d: %w", pc.Name, g.Index, err)
		}
		if err := partitioner.Apply(b, g.Index, r); err != nil {
			if errors.Is(err, partitioner.ErrBusy) {
				lg.Warn("mig-parted: instances the configuration replaces are in use; the GPU stays as it is", "err", err)
				continue
			}
			return fmt.Errorf("mig.parted_config %q: %w", pc.Name, err)
		}
		lg.Info("mig-parted: set up the configuration", "from", now.String(), "to", target.String(), "steps", len(r.Steps))
	}
	return nil
}
