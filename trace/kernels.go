package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// Builtin holds copies of the twelve real kernel traces (and their
// summary.txt) recorded on an NVIDIA H200, so the simulator works on a
// fresh machine.
//
//go:embed data/*.jsonl.gz data/summary.txt
var Builtin embed.FS

// Kernel is one kernel of a trace. Times are relative to the earliest
// launch call or kernel start of its iteration.
type Kernel struct {
	ID        kernelsched.KernelID
	Regs      int
	SharedMem int
	// Occupancy is the profiler's estimated achieved occupancy, percent.
	Occupancy int
	Stream    int
	// Start and Dur are the kernel's GPU start and duration; Launch the
	// host time of its launch call.
	Start, Dur, Launch time.Duration
}

// KernelTrace is a loaded trace: the kernels of each complete iteration.
type KernelTrace struct {
	Name       string
	Iterations [][]Kernel
	// Numbers are the iterations' numbers in the file and Bases their
	// first times there (each iteration's times start at zero), so that
	// the pause between consecutive iterations can be known.
	Numbers []int
	Bases   []time.Duration
	// IterTime is the iteration time measured without the profiler (from
	// summary.txt), or 0 when unknown.
	IterTime time.Duration
}

// record is one line of a trace file.
type record struct {
	Iter      *int     `json:"iter"`
	Name      string   `json:"name"`
	Grid      []int64  `json:"grid"`
	Block     []int64  `json:"block"`
	Regs      int      `json:"regs"`
	Smem      int      `json:"smem"`
	Occ       int      `json:"occ"`
	Stream    int      `json:"stream"`
	TS        *float64 `json:"ts"`
	Dur       *float64 `json:"dur"`
	LaunchTS  *float64 `json:"launch_ts"`
	LaunchAPI string   `json:"launch_api"`
}

// ReadKernelTrace parses a trace (JSON lines, gzip-compressed or not).
// Kernels of iteration -1 (launches the profiler did not match to an
// iteration) are skipped. Errors name the line and field.
func ReadKernelTrace(name string, r io.Reader) (*KernelTrace, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	t := &KernelTrace{Name: name}
	iters := map[int][]Kernel{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		iter, k, err := parseRecord(b)
		if err != nil {
			return nil, fmt.Errorf("trace %s line %d: %w", name, line, err)
		}
		if iter >= 0 {
			iters[iter] = append(iters[iter], k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	keys := make([]int, 0, len(iters))
	for i := range iters {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	for _, i := range keys {
		ks := iters[i]
		slices.SortStableFunc(ks, func(a, b Kernel) int { return cmp.Compare(a.Start, b.Start) })
		base := ks[0].Start
		for _, k := range ks {
			base = min(base, k.Start, k.Launch)
		}
		for j := range ks {
			ks[j].Start -= base
			ks[j].Launch -= base
		}
		t.Iterations = append(t.Iterations, ks)
		t.Numbers = append(t.Numbers, i)
		t.Bases = append(t.Bases, base)
	}
	if len(t.Iterations) == 0 {
		return nil, fmt.Errorf("trace %s: no kernel belongs to an iteration", name)
	}
	return t, nil
}

func parseRecord(b []byte) (int, Kernel, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return 0, Kernel{}, err
	}
	switch {
	case r.Iter == nil:
		return 0, Kernel{}, errors.New("iter: missing")
	case *r.Iter < -1:
		return 0, Kernel{}, fmt.Errorf("iter: %d is below -1", *r.Iter)
	case strings.TrimSpace(r.Name) == "":
		return 0, Kernel{}, errors.New("name: empty")
	}
	grid, err := dim3("grid", r.Grid)
	if err != nil {
		return 0, Kernel{}, err
	}
	block, err := dim3("block", r.Block)
	if err != nil {
		return 0, Kernel{}, err
	}
	if n := block.Count(); n > uint64(kernelsched.Hopper.MaxThreadsPerBlock) {
		return 0, Kernel{}, fmt.Errorf("block: %v has %d threads, more than %d", r.Block, n, kernelsched.Hopper.MaxThreadsPerBlock)
	}
	if r.Regs < 0 || r.Regs > 255 {
		return 0, Kernel{}, fmt.Errorf("regs: %d is outside 0..255", r.Regs)
	}
	if r.Smem < 0 || r.Smem > kernelsched.Hopper.SharedMemPerBlock {
		return 0, Kernel{}, fmt.Errorf("smem: %d is outside 0..%d", r.Smem, kernelsched.Hopper.SharedMemPerBlock)
	}
	ts, err := micros("ts", r.TS, false)
	if err != nil {
		return 0, Kernel{}, err
	}
	dur, err := micros("dur", r.Dur, true)
	if err != nil {
		return 0, Kernel{}, err
	}
	launch, err := micros("launch_ts", r.LaunchTS, false)
	if err != nil {
		return 0, Kernel{}, err
	}
	return *r.Iter, Kernel{
		ID:   kernelsched.KernelID{Name: r.Name, Grid: grid, Block: block},
		Regs: r.Regs, SharedMem: r.Smem, Occupancy: r.Occ, Stream: r.Stream,
		Start: ts, Dur: dur, Launch: launch,
	}, nil
}

func dim3(field string, v []int64) (kernelsched.Dim3, error) {
	if len(v) != 3 {
		return kernelsched.Dim3{}, fmt.Errorf("%s: %v does not have 3 components", field, v)
	}
	var d kernelsched.Dim3
	for i, x := range v {
		if x < 1 || x > math.MaxInt32 {
			return kernelsched.Dim3{}, fmt.Errorf("%s: %v has a component outside 1..%d", field, v, math.MaxInt32)
		}
		d[i] = uint32(x)
	}
	return d, nil
}

// maxStamp bounds trace timestamps and maxMicros durations, in
// microseconds, so they convert to time.Duration without overflow.
const (
	maxStamp  = 9e15
	maxMicros = 1e13
)

func micros(field string, v *float64, duration bool) (time.Duration, error) {
	switch {
	case v == nil:
		return 0, fmt.Errorf("%s: missing", field)
	case math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 || *v > maxStamp:
		return 0, fmt.Errorf("%s: %v is not a time in microseconds", field, *v)
	case duration && *v > maxMicros:
		return 0, fmt.Errorf("%s: %v us is too long", field, *v)
	}
	return time.Duration(math.Round(*v * 1e3)), nil
}

// LoadKernelTrace reads a trace by path, or by name from dir (NAME or
// NAME.jsonl.gz), or from the built-in traces. The iteration time comes
// from a summary.txt beside it when it has one.
func LoadKernelTrace(nameOrPath, dir string) (*KernelTrace, error) {
	var fsys fs.FS
	var file string
	switch {
	case isFile(nameOrPath):
		fsys, file = os.DirFS(filepath.Dir(nameOrPath)), filepath.Base(nameOrPath)
	case dir != "" && isFile(filepath.Join(dir, nameOrPath+".jsonl.gz")):
		fsys, file = os.DirFS(dir), nameOrPath+".jsonl.gz"
	case dir != "" && isFile(filepath.Join(dir, nameOrPath)):
		fsys, file = os.DirFS(dir), nameOrPath
	default:
		sub, _ := fs.Sub(Builtin, "data")
		if _, err := fs.Stat(sub, nameOrPath+".jsonl.gz"); err != nil {
			return nil, fmt.Errorf("trace %q: no such file, and not a trace name in %s or the built-in traces (%s)", nameOrPath, orNone(dir), strings.Join(BuiltinNames(), ", "))
		}
		fsys, file = sub, nameOrPath+".jsonl.gz"
	}
	f, err := fsys.Open(file)
	if err != nil {
		return nil, fmt.Errorf("trace %q: %w", nameOrPath, err)
	}
	defer f.Close()
	name := strings.TrimSuffix(strings.TrimSuffix(file, ".gz"), ".jsonl")
	t, err := ReadKernelTrace(name, f)
	if err != nil {
		return nil, err
	}
	if s, err := fs.ReadFile(fsys, "summary.txt"); err == nil {
		t.IterTime = ParseSummary(string(s))[name]
	}
	return t, nil
}

func orNone(dir string) string {
	if dir == "" {
		return "(no trace directory)"
	}
	return dir
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// BuiltinNames lists the built-in traces.
func BuiltinNames() []string {
	entries, _ := fs.Glob(Builtin, "data/*.jsonl.gz")
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(filepath.Base(e), ".jsonl.gz"))
	}
	return out
}

// ParseSummary reads summary.txt lines like "resnet50 infer bs=1
// iter_ms=3.30 ..." into iteration times by trace name
// (resnet50_infer_bs1). Lines it does not understand are skipped.
func ParseSummary(text string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[2], "bs=") || !strings.HasPrefix(f[3], "iter_ms=") {
			continue
		}
		var ms float64
		if _, err := fmt.Sscanf(f[3], "iter_ms=%g", &ms); err != nil || ms <= 0 || ms > 1e7 {
			continue
		}
		out[f[0]+"_"+f[1]+"_bs"+strings.TrimPrefix(f[2], "bs=")] = time.Duration(ms * 1e6)
	}
	return out
}

// Profile builds the task profile of the trace: each iteration is a run.
// Launch times are left out: the profiler's host timeline is slowed by the
// profiler itself.
func (t *KernelTrace) Profile(key string) (*kernelsched.TaskProfile, error) {
	return t.profile(key, false)
}

// HookProfile builds the task profile of a trace the hook wrote in its
// profiling phase (each run an iteration), launch times included: the
// hook's own timing of launch calls is what the sharing phase sees.
func (t *KernelTrace) HookProfile(key string) (*kernelsched.TaskProfile, error) {
	return t.profile(key, true)
}

// MaxRunGap is the longest pause between two consecutive runs of a hook
// trace that counts as a gap after the first run's last kernel (a think
// time in a request loop); a longer one is idleness, not predicted.
const MaxRunGap = 10 * time.Millisecond

// MaxRunSpan bounds an iteration's span (its first kernel's start to its
// last kernel's end) that a profile takes: a kernel record the GPU's
// tracer left incomplete read once as lasting since the host booted (an
// iteration 147 days long, in a profile no reader took), and one such
// record must not spoil the profile of the rest.
const MaxRunSpan = time.Hour

func (t *KernelTrace) profile(key string, launches bool) (*kernelsched.TaskProfile, error) {
	b := kernelsched.NewProfileBuilder(key)
	skipped := 0
	for _, it := range t.Iterations {
		if !plausibleRun(it) {
			skipped++
			continue
		}
		obs := make([]kernelsched.Observation, len(it))
		for i, k := range it {
			obs[i] = kernelsched.Observation{ID: k.ID, Regs: k.Regs, SharedMem: k.SharedMem, Start: k.Start, End: k.Start + k.Dur}
			if launches {
				// Zero means "not observed" to the builder; the run's
				// first launch is at zero, so shift all by 1 ns.
				obs[i].Launch = k.Launch + 1
			}
		}
		if err := b.AddRun(obs); err != nil {
			return nil, err
		}
	}
	if skipped > 0 && skipped == len(t.Iterations) {
		return nil, fmt.Errorf("profile %q: each of its %d iterations has a kernel time out of bounds (negative, or a span past %v)", key, skipped, MaxRunSpan)
	}
	if launches {
		t.addRunGaps(b)
	}
	return b.Profile(), nil
}

// plausibleRun reports whether an iteration's kernel times can be
// profiled: none negative, its span within MaxRunSpan.
func plausibleRun(it []Kernel) bool {
	if len(it) == 0 {
		return true // the builder says what is wrong with it
	}
	first, last := it[0].Start, it[0].Start+it[0].Dur
	for _, k := range it {
		if k.Start < 0 || k.Dur < 0 {
			return false
		}
		first, last = min(first, k.Start), max(last, k.Start+k.Dur)
	}
	return last-first <= MaxRunSpan
}

// addRunGaps adds the pause between consecutive runs, up to MaxRunGap, as
// a gap after the earlier run's last kernel (the one that ends last).
func (t *KernelTrace) addRunGaps(b *kernelsched.ProfileBuilder) {
	if len(t.Bases) != len(t.Iterations) || len(t.Numbers) != len(t.Iterations) {
		return
	}
	for i := 0; i+1 < len(t.Iterations); i++ {
		if t.Numbers[i+1] != t.Numbers[i]+1 || !plausibleRun(t.Iterations[i]) || !plausibleRun(t.Iterations[i+1]) {
			continue
		}
		run := t.Iterations[i]
		last := run[0]
		for _, k := range run {
			if k.Start+k.Dur > last.Start+last.Dur {
				last = k
			}
		}
		next := t.Iterations[i+1][0]
		for _, k := range t.Iterations[i+1] {
			next.Start = min(next.Start, k.Start)
		}
		gap := (t.Bases[i+1] + next.Start) - (t.Bases[i] + last.Start + last.Dur)
		if gap >= 0 && gap <= MaxRunGap {
			b.AddGapAfter(last.ID, gap)
		}
	}
}
