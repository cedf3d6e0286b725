package node

import (
	"fmt"
	"strconv"

	"github.com/mmkgpu/mmk/partitioner"
)

// gpuInfo is one GPU as the placement loop sees it: its layout (a GPU
// without MIG is one instance of the whole-GPU profile) and, per
// instance, the key of its MPS daemon and kernel scheduler and the
// device its jobs are given.
type gpuInfo struct {
	state  partitioner.GPUState
	model  *partitioner.Model
	layout partitioner.Layout
	mig    bool
	keys   []string
	// names are the instances as mmk shows them ("gpu0/gi1", "gpu2").
	names  []string
	device []string
	// skip says why the GPU takes no jobs ("" when it does).
	skip string
}

// readGPUs reads the backend's GPUs and their layouts.
func (n *Node) readGPUs() ([]gpuInfo, error) {
	inv, err := partitioner.ReadInventory(n.cfg.Backend)
	if err != nil {
		return nil, err
	}
	out := make([]gpuInfo, len(inv))
	for i, g := range inv {
		gi := gpuInfo{state: g, mig: g.MIG.Supported && g.MIG.Current}
		m, err := partitioner.LookupModel(g.Model)
		if err != nil {
			gi.skip = fmt.Sprintf("mmk has no MIG table for %s (%d MiB)", g.Name, g.MemoryMiB)
			out[i] = gi
			continue
		}
		gi.model = m
		if gi.mig {
			gi.layout, err = partitioner.LayoutOf(m, g.Instances)
			if err != nil {
				return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
			}
			for _, in := range g.Instances {
				gi.keys = append(gi.keys, instanceKey(g.Index, in.Profile, in.Start))
				gi.names = append(gi.names, partitioner.InstanceName(g.Index, in.ID))
				gi.device = append(gi.device, in.UUID())
			}
		} else {
			// MIG off: the one instance is the whole GPU, every SM of it
			// (the A100's whole-GPU MIG instance has 98 of its 108).
			m = m.MIGDisabled()
			gi.model = m
			whole := &m.Profiles[len(m.Profiles)-1]
			gi.layout, err = partitioner.NewLayout(m, []partitioner.Instance{{Profile: whole, Start: 0}})
			if err != nil {
				return nil, fmt.Errorf("GPU %d: whole-GPU layout: %w", g.Index, err)
			}
			gi.keys = []string{"gpu" + strconv.Itoa(g.Index)}
			gi.names = []string{partitioner.WholeGPUName(g.Index)}
			gi.device = []string{g.UUID}
		}
		out[i] = gi
	}
	return out, nil
}

// instanceKey names a MIG instance: "gpu0-3g.40gb-at4".
func instanceKey(gpu int, profile string, start int) string {
	return "gpu" + strconv.Itoa(gpu) + "-" + profile + "-at" + strconv.Itoa(start)
}

// maxJobMemory is the most memory a job can ask for and still find a
// place: the largest instance, or the largest GPU when MIG is managed.
func maxJobMemory(gpus []gpuInfo, manageMIG bool) int64 {
	var m int64
	for _, g := range gpus {
		if g.skip != "" {
			continue
		}
		if manageMIG && g.mig {
			m = max(m, g.model.Profiles[len(g.model.Profiles)-1].MemoryMiB)
			continue
		}
		for _, in := range g.layout.Instances {
			m = max(m, in.Profile.MemoryMiB)
		}
	}
	return m
}
