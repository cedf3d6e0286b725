// Package tpcprobe (a unit of node's floor: it runs processes and writes
// files, over slo's pure map) maps a GPU's TPC mask slots on the machine itself, so
// that mmkd can mask offline jobs to a known share of a GPU without a map
// taken by hand (issue 53): it runs mmk-tpcprobe (hook/tpcprobe), a
// kernel that records the SMs it ran on, once unmasked and once with
// each slot alone masked by the hook (MMK_TPC_OFF), builds the map
// (slo.MapFromProbes), checks that a mask the kernel scheduler would
// write takes exactly the SMs the map says (slo.TPCMap.CheckKeep), and
// keeps the map per GPU UUID and driver version, so that the next start
// on the same GPU and driver reads it. It is the IO around slo's pure
// map; mmkd's node decides what a GPU's map means for its ladder.
package tpcprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// Mapper maps GPUs through the probe. Its zero fields take the defaults
// below; Probe and Hook are needed.
type Mapper struct {
	// Probe is mmk-tpcprobe, Hook libmmkhook.so (the mask the probe runs
	// under is the hook's, as a job's is).
	Probe, Hook string
	// CacheDir keeps one map per GPU ("": none kept); Driver is the
	// driver's version the maps are kept for ("": unknown, nothing kept
	// or read: a map of one driver may not hold under another).
	CacheDir, Driver string
	// Jobs is how many probes run at once (8); Timeout how long one may
	// take (a minute); Slots how many descriptor slots are scanned (72,
	// a Hopper's).
	Jobs    int
	Timeout time.Duration
	Slots   int
	// Env is the environment the probes start from (nil: mmkd's own).
	Env []string
}

// Defaults of a Mapper's zero fields.
const (
	DefaultJobs    = 8
	DefaultTimeout = time.Minute
	DefaultSlots   = 72
)

// Mapped is one GPU's map and how it was had.
type Mapped struct {
	Map *slo.TPCMap
	// Cached: read from CacheDir, taken and checked at an earlier start on
	// this GPU and driver.
	Cached bool
	// CheckSlots is the keep count whose mask was checked, and Kept the
	// TPCs it kept of the GPU's.
	CheckSlots, Kept, TPCs int
	// Took is how long mapping took (reading the cache included).
	Took time.Duration
	// KeepErr says why a map taken could not be kept for the next start
	// (nil: kept, or nothing to keep it in); the map is good all the same.
	KeepErr error
}

// mappedOf is map tm whose mask keeping slots was checked: the TPCs it
// kept of the GPU's (two SMs a TPC, as the kernel scheduler counts them).
func mappedOf(tm *slo.TPCMap, slots int) Mapped {
	tpcs := slo.TPCsOf(tm.SMs)
	return Mapped{Map: tm, CheckSlots: slots, Kept: tm.Kept(slots, tpcs), TPCs: tpcs}
}

// reply is what mmk-tpcprobe prints.
type reply struct {
	GPU  string `json:"gpu"`
	UUID string `json:"uuid"`
	SMs  int    `json:"sms"`
	Seen []int  `json:"seen"`
}

// Map maps the GPU of uuid: from the cache where this driver's map of it
// is kept, else by probing (1 + Slots + 1 probe runs, Jobs at a time;
// progress, if set, is told after each). An error says which run failed
// and why; nothing is kept then. A map that could not be kept is
// returned with KeepErr set.
func (m *Mapper) Map(ctx context.Context, uuid string, progress func(done, total int)) (Mapped, error) {
	start := time.Now()
	if got, ok := m.Cached(uuid); ok {
		got.Took = time.Since(start)
		return got, nil
	}
	slots := m.Slots
	if slots <= 0 {
		slots = DefaultSlots
	}
	total := slots + 2
	var done atomic.Int32
	tick := func() {
		if progress != nil {
			progress(int(done.Add(1)), total)
		}
	}
	full, err := m.run(ctx, uuid, nil)
	if err != nil {
		return Mapped{}, fmt.Errorf("the unmasked probe: %w", err)
	}
	tick()
	off := make([][]int, slots)
	errs := make([]error, slots)
	jobs := m.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for s := range slots {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := m.run(ctx, uuid, []string{"MMK_TPC_OFF=" + strconv.Itoa(s)})
			if err != nil {
				errs[s] = fmt.Errorf("the probe with slot %d masked: %w", s, err)
				return
			}
			off[s] = r.Seen
			tick()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Mapped{}, err
	}
	tm, err := slo.MapFromProbes(full.GPU, uuid, full.SMs, full.Seen, off)
	if err != nil {
		return Mapped{}, err
	}
	tpcs := slo.TPCsOf(full.SMs)
	kept := slo.KeptTPCs(0.5, tpcs)
	keep := tm.KeepSlots(kept, tpcs)
	half, err := m.run(ctx, uuid, []string{"MMK_TPC_KEEP=" + strconv.Itoa(keep)})
	if err != nil {
		return Mapped{}, fmt.Errorf("the check (a mask keeping %d slots): %w", keep, err)
	}
	tick()
	if err := tm.CheckKeep(keep, half.Seen); err != nil {
		return Mapped{}, fmt.Errorf("the check: %w", err)
	}
	got := mappedOf(tm, keep)
	got.KeepErr = m.keep(uuid, got)
	got.Took = time.Since(start)
	return got, nil
}

// run is one probe on the GPU of uuid, with the hook masking by extra
// (nil: no hook, unmasked).
func (m *Mapper) run(ctx context.Context, uuid string, extra []string) (reply, error) {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.Probe)
	env := m.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(without(env, "CUDA_VISIBLE_DEVICES", "CUDA_INJECTION64_PATH", "MMK_TPC_MASK", "MMK_TPC_OFF", "MMK_TPC_KEEP", "MMK_SCHED_SOCKET",
		"CUDA_MPS_PIPE_DIRECTORY"), "CUDA_VISIBLE_DEVICES="+uuid)
	if extra != nil {
		env = append(env, "CUDA_INJECTION64_PATH="+m.Hook, "MMK_TPC_MASK=1")
		env = append(env, extra...)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return reply{}, fmt.Errorf("%s: no answer within %v", m.Probe, timeout)
		}
		return reply{}, fmt.Errorf("%s: %w: %s", m.Probe, err, lastLine(stderr.Bytes()))
	}
	var r reply
	if err := json.Unmarshal(lastLineOf(stdout.Bytes()), &r); err != nil {
		return reply{}, fmt.Errorf("%s: its answer %q: %w", m.Probe, lastLine(stdout.Bytes()), err)
	}
	if r.UUID != uuid {
		return reply{}, fmt.Errorf("%s ran on %s, not %s", m.Probe, r.UUID, uuid)
	}
	return r, nil
}

// without is env less the variables named.
func without(env []string, names ...string) []string {
	out := make([]string, 0, len(env)+4)
next:
	for _, kv := range env {
		for _, n := range names {
			if len(kv) > len(n) && kv[:len(n)] == n && kv[len(n)] == '=' {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// lastLineOf is b's last non-empty line.
func lastLineOf(b []byte) []byte {
	b = bytes.TrimRight(b, "\n ")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b
}

// lastLine is b's last line as a message, cut to 300 bytes ("no output"
// for none).
func lastLine(b []byte) string {
	l := lastLineOf(b)
	if len(l) == 0 {
		return "no output"
	}
	if len(l) > 300 {
		l = l[len(l)-300:]
	}
	return string(l)
}
