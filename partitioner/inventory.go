package partitioner

import "fmt"

// GPUState is a GPU with its MIG instances and their layout: what
// mmkctl gpus and the API show.
type GPUState struct {
	GPU
	// Layout is the canonical text of the instances; "" when there are
	// none or MIG is disabled.
	Layout    string        `json:"layout"`
	Instances []GPUInstance `json:"instances"`
}

// ReadInventory reads every GPU of a backend with its instances.
func ReadInventory(b Backend) ([]GPUState, error) {
	gpus, err := b.GPUs()
	if err != nil {
		return nil, fmt.Errorf("list GPUs: %w", err)
	}
	out := make([]GPUState, len(gpus))
	for i, g := range gpus {
		out[i] = GPUState{GPU: g, Instances: []GPUInstance{}}
		if !g.MIG.Supported || !g.MIG.Current {
			continue
		}
		insts, err := b.Instances(g.Index)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		m, err := b.Model(g.Index)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		l, err := LayoutOf(m, insts)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		for k := range insts {
			insts[k].Name = InstanceName(g.Index, insts[k].ID)
		}
		out[i].Instances, out[i].Layout = insts, l.String()
	}
	return out, nil
}
