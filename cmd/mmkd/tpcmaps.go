package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/node/tpcprobe"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/slo"
)

// loadTPCMaps reads every .json file of dir (slo.tpc_maps) as a GPU's
// TPC slot map, keyed by the GPU UUID inside it. A file that is not a
// map, one without a UUID, and two maps of one GPU are errors naming the
// files; an empty dir is no maps.
func loadTPCMaps(dir string) (map[string]*slo.TPCMap, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("slo.tpc_maps: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(strings.ToLower(e.Name()), ".json") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	maps, from := map[string]*slo.TPCMap{}, map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("slo.tpc_maps: %w", err)
		}
		m, err := slo.ParseTPCMap(b)
		if err != nil {
			return nil, fmt.Errorf("slo.tpc_maps: %s: %w", f, err)
		}
		if m.UUID == "" {
			return nil, fmt.Errorf("slo.tpc_maps: %s: no uuid: which GPU the map is of must be said", f)
		}
		if prev, ok := from[m.UUID]; ok {
			return nil, fmt.Errorf("slo.tpc_maps: %s and %s are both maps of %s", prev, f, m.UUID)
		}
		maps[m.UUID], from[m.UUID] = m, f
	}
	return maps, nil
}

// driverVersionFile is where the NVIDIA kernel module says its version.
const driverVersionFile = "/proc/driver/nvidia/version"

// tpcMapper is the mapper of the GPUs' TPC slots (slo.masks), or nil
// and why none: masks off, the fake backend (no TPC to mask), or no
// probe next to the hook. Maps are kept in the data directory per GPU
// and driver.
func tpcMapper(cfg *configs.Config, backend partitioner.Backend, sc *node.SchedConfig, dir string) (node.TPCMapper, string) {
	switch {
	case !cfg.SLO.Masks:
		return nil, "slo.masks is off"
	case backend.Name() != "nvml":
		return nil, "the " + backend.Name() + " GPU backend has no TPCs to mask"
	}
	probe := filepath.Join(filepath.Dir(sc.Hook), "mmk-tpcprobe")
	if _, err := os.Stat(probe); err != nil {
		return nil, fmt.Sprintf("no mmk-tpcprobe next to the hook (%v)", err)
	}
	return &tpcprobe.Mapper{Probe: probe, Hook: sc.Hook, CacheDir: filepath.Join(dir, "tpcmaps"), Driver: tpcprobe.DriverVersion(driverVersionFile)}, ""
}
