package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
)

// The memory limit modes (mps.memory_limit).
const (
	// MemLimitSpec limits the jobs whose spec gives their memory.
	MemLimitSpec = "spec"
	// MemLimitAll limits every job, those without a memory of their own
	// at the default memory.
	MemLimitAll = "all"
	// MemLimitOff limits no job.
	MemLimitOff = "off"
)

// MemLimitConfig says which jobs' MPS clients get a pinned device memory
// limit (mps.MemLimitEnv) and how far above their memory it lies. The
// limit is what makes a job's memory more than a placement hint: a job
// that asks for more gets CUDA's out-of-memory error, and its co-runners
// under the same MPS daemon keep theirs.
type MemLimitConfig struct {
	// Mode is MemLimitSpec (default), MemLimitAll or MemLimitOff.
	Mode string
	// MarginPct and MarginMiB are added to the job's memory: the limit is
	// memory x (1 + MarginPct/100) + MarginMiB.
	MarginPct int
	MarginMiB int64
}

// limitFor is the memory limit of a job's MPS client in MiB; 0: none.
func (c MemLimitConfig) limitFor(j *jobs.Job) int64 {
	switch {
	case c.Mode == MemLimitOff:
		return 0
	case c.Mode != MemLimitAll && j.Spec.MemoryMiB == 0:
		return 0
	}
	return j.MemoryMiB + j.MemoryMiB*int64(c.MarginPct)/100 + c.MarginMiB
}

// oomPatterns are what CUDA and the frameworks on it print when an
// allocation fails: PyTorch's caching allocator ("CUDA out of memory",
// torch.OutOfMemoryError), the CUDA runtime and driver error names,
// "CUDA error: out of memory", TensorFlow ("OOM when allocating"), JAX/XLA
// ("RESOURCE_EXHAUSTED: Out of memory") and CuPy (OutOfMemoryError).
var oomPatterns = regexp.MustCompile(`(?i)CUDA out of memory|CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|OutOfMemoryError|RESOURCE_EXHAUSTED: Out of memory|OOM when allocating`)

// oomTailBytes is how much of the end of a job's log is searched for an
// out-of-memory message: what a failing job prints last.
const oomTailBytes = 64 << 10

// nearLimit is the share of its limit a job's NVML memory must have
// reached for mmk to say, without a message in its log, that it failed at
// its limit.
const nearLimit = 0.98

// memLimitReason says why a failed job ended when the evidence shows its
// memory limit stopped it: an out-of-memory message at the end of its log,
// or NVML's memory of its processes at the limit. It names the limit and
// the variable, and what it saw; "" when the job had no limit or nothing
// shows it hit it (the job failed for another reason).
func (n *Node) memLimitReason(j *jobs.Job, exit string) string {
	pl := j.Placement
	if pl == nil || pl.MemLimitMiB <= 0 {
		return ""
	}
	limit := fmt.Sprintf("%s=%s (%d MiB: memory %d MiB + %d MiB margin)", mps.MemLimitEnv, mps.MemLimitValue(pl.MemLimitMiB),
		pl.MemLimitMiB, j.MemoryMiB, pl.MemLimitMiB-j.MemoryMiB)
	peak, seen := n.usagePeak(j.ID, j.StartedAt)
	line, err := oomLine(n.cfg.Runner.LogPath(j.ID))
	if err != nil {
		n.cfg.Log.Warn("memory limit: read the job's log", "job", j.ID, "err", err)
	}
	switch {
	case line != "":
		s := fmt.Sprintf("out of GPU memory under its limit %s; its log: %q", limit, line)
		if seen {
			s += fmt.Sprintf("; NVML saw at most %d MiB", peak)
		}
		return s + "; " + exit
	case seen && float64(peak) >= nearLimit*float64(pl.MemLimitMiB):
		return fmt.Sprintf("%s at its GPU memory limit %s: NVML saw %d MiB (no out-of-memory message in its log)", exit, limit, peak)
	}
	return ""
}

// oomLine is the last line of the end of a log that reports a failed GPU
// allocation, shortened; "" when there is none.
func oomLine(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	off := max(st.Size()-oomTailBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	lines := bytes.Split(buf, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if oomPatterns.Match(lines[i]) {
			return shorten(strings.TrimSpace(string(lines[i])), 160), nil
		}
	}
	return "", nil
}

// shorten cuts s to at most n bytes of printable text.
func shorten(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	return truncate(s, n-3) + "..."
}
