package kernelsched

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// ProfileFormat and ProfileVersion head every profile file; Load refuses
// any other version.
const (
	ProfileFormat  = "mmk-kernel-profile"
	ProfileVersion = 1
)

// profileFile is the JSON form of a set of task profiles. Times are in
// microseconds, as in the kernel traces.
type profileFile struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	Tasks   []profileTask `json:"tasks"`
}

type profileTask struct {
	Key        string          `json:"key"`
	Runs       int             `json:"runs"`
	RunKernels float64         `json:"run_kernels"`
	RunSpanUs  float64         `json:"run_span_us"`
	RunBusyUs  float64         `json:"run_busy_us"`
	Kernels    []profileKernel `json:"kernels"`
}

type profileKernel struct {
	Name    string  `json:"name"`
	Grid    Dim3    `json:"grid"`
	Block   Dim3    `json:"block"`
	Regs    int     `json:"regs"`
	Smem    int     `json:"smem"`
	Count   int     `json:"count"`
	SKUs    float64 `json:"sk_us"`
	SKStdUs float64 `json:"sk_std_us"`
	Gaps    int     `json:"gaps"`
	SGUs    float64 `json:"sg_us"`
	SGStdUs float64 `json:"sg_std_us"`
	SGMaxUs float64 `json:"sg_max_us"`
	// NextLaunchMaxUs is omitted when launch times were not observed.
	NextLaunchMaxUs float64 `json:"next_launch_max_us,omitempty"`
}

func toUs(d time.Duration) float64 { return float64(d) / 1e3 }

// fromUs converts microseconds after validate has checked them.
func fromUs(v float64) time.Duration { return time.Duration(math.Round(v * 1e3)) }

// WriteProfiles writes profiles as one versioned JSON document. A profile
// ReadProfiles would refuse (a time past a day, say) is an error naming
// the task and field, and nothing is written: before, such a file was
// written and the kernel scheduler tried to load it, and failed, every
// second.
func WriteProfiles(w io.Writer, profiles []*TaskProfile) error {
	f := profileFile{Format: ProfileFormat, Version: ProfileVersion, Tasks: make([]profileTask, 0, len(profiles))}
	keys := make(map[string]bool, len(profiles))
	for i, p := range profiles {
		if keys[p.Key] {
			return fmt.Errorf("write profiles: tasks[%d].key: %q appears twice", i, p.Key)
		}
		keys[p.Key] = true
		t := profileTask{Key: p.Key, Runs: p.Runs, RunKernels: p.RunKernels, RunSpanUs: toUs(p.RunSpan), RunBusyUs: toUs(p.RunBusy)}
		for _, k := range p.Kernels {
			t.Kernels = append(t.Kernels, profileKernel{
				Name: k.ID.Name, Grid: k.ID.Grid, Block: k.ID.Block, Regs: k.Regs, Smem: k.SharedMem,
				Count: k.Count, SKUs: toUs(k.SK), SKStdUs: toUs(k.SKStd), Gaps: k.Gaps, SGUs: toUs(k.SG), SGStdUs: toUs(k.SGStd), SGMaxUs: toUs(k.SGMax), NextLaunchMaxUs: toUs(k.NextLaunchMax),
			})
		}
		if _, err := t.profile(); err != nil {
			return fmt.Errorf("write profiles: tasks[%d] (%q): %w", i, p.Key, err)
		}
		f.Tasks = append(f.Tasks, t)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write profiles: %w", err)
	}
	return nil
}

// LoadProfiles reads and validates a profile file.
func LoadProfiles(path string) ([]*TaskProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load profiles: %w", err)
	}
	ps, err := ReadProfiles(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load profiles %s: %w", path, err)
	}
	return ps, nil
}

// ReadProfiles decodes and validates one profile document. Unknown fields,
// another format or version, and any value out of range are errors that
// name the field.
func ReadProfiles(r io.Reader) ([]*TaskProfile, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f profileFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode profiles: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode profiles: data after the document")
	}
	if f.Format != ProfileFormat {
		return nil, fmt.Errorf("format: %q is not %q", f.Format, ProfileFormat)
	}
	if f.Version != ProfileVersion {
		return nil, fmt.Errorf("version: %d is not supported (this build reads %d)", f.Version, ProfileVersion)
	}
	keys := make(map[string]bool, len(f.Tasks))
	out := make([]*TaskProfile, 0, len(f.Tasks))
	for i, t := range f.Tasks {
		p, err := t.profile()
		if err != nil {
			return nil, fmt.Errorf("tasks[%d]: %w", i, err)
		}
		if keys[p.Key] {
			return nil, fmt.Errorf("tasks[%d].key: %q appears twice", i, p.Key)
		}
		keys[p.Key] = true
		out = append(out, p)
	}
	return out, nil
}

func (t profileTask) profile() (*TaskProfile, error) {
	if t.Key == "" {
		return nil, errors.New("key: empty")
	}
	if t.Runs < 1 {
		return nil, fmt.Errorf("runs: %d must be at least 1", t.Runs)
	}
	if err := checkTimes(field{"run_kernels", t.RunKernels}, field{"run_span_us", t.RunSpanUs}, field{"run_busy_us", t.RunBusyUs}); err != nil {
		return nil, err
	}
	p := &TaskProfile{Key: t.Key, Runs: t.Runs, RunKernels: t.RunKernels, RunSpan: fromUs(t.RunSpanUs), RunBusy: fromUs(t.RunBusyUs)}
	for j, k := range t.Kernels {
		s, err := k.stat()
		if err != nil {
			return nil, fmt.Errorf("kernels[%d]: %w", j, err)
		}
		p.Kernels = append(p.Kernels, s)
	}
	sortKernels(p.Kernels)
	for j := 1; j < len(p.Kernels); j++ {
		if p.Kernels[j].ID == p.Kernels[j-1].ID {
			return nil, fmt.Errorf("kernels: %s appears twice", p.Kernels[j].ID)
		}
	}
	p.buildIndex()
	return p, nil
}

func (k profileKernel) stat() (KernelStat, error) {
	id := KernelID{Name: k.Name, Grid: k.Grid, Block: k.Block}
	if err := id.Validate(); err != nil {
		return KernelStat{}, err
	}
	switch {
	case k.Count < 1:
		return KernelStat{}, fmt.Errorf("count: %d must be at least 1", k.Count)
	case k.Gaps < 0 || k.Gaps > k.Count:
		return KernelStat{}, fmt.Errorf("gaps: %d is outside 0..count (%d)", k.Gaps, k.Count)
	case k.Regs < 0:
		return KernelStat{}, fmt.Errorf("regs: %d is negative", k.Regs)
	case k.Smem < 0:
		return KernelStat{}, fmt.Errorf("smem: %d is negative", k.Smem)
	}
	if err := checkTimes(field{"sk_us", k.SKUs}, field{"sk_std_us", k.SKStdUs}, field{"sg_us", k.SGUs},
		field{"sg_std_us", k.SGStdUs}, field{"sg_max_us", k.SGMaxUs}, field{"next_launch_max_us", k.NextLaunchMaxUs}); err != nil {
		return KernelStat{}, err
	}
	if k.SGMaxUs < k.SGUs {
		return KernelStat{}, fmt.Errorf("sg_max_us: %v is below sg_us %v", k.SGMaxUs, k.SGUs)
	}
	return KernelStat{
		ID: id, Regs: k.Regs, SharedMem: k.Smem, Count: k.Count,
		SK: fromUs(k.SKUs), SKStd: fromUs(k.SKStdUs), Gaps: k.Gaps, SG: fromUs(k.SGUs), SGStd: fromUs(k.SGStdUs), SGMax: fromUs(k.SGMaxUs), NextLaunchMax: fromUs(k.NextLaunchMaxUs),
	}, nil
}

// maxProfileUs bounds a time in a profile file (one day) so it converts to
// a time.Duration without overflow.
const maxProfileUs = 86400e6

// field is a named number of a profile file.
type field struct {
	name string
	v    float64
}

// checkTimes reports the first field that is not a number in
// 0..maxProfileUs.
func checkTimes(fields ...field) error {
	for _, f := range fields {
		if math.IsNaN(f.v) || f.v < 0 || f.v > maxProfileUs {
			return fmt.Errorf("%s: %v is outside 0..%v", f.name, f.v, maxProfileUs)
		}
	}
	return nil
}
