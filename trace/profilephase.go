package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/kernelsched"
)

// ProfileOptions set a profiling phase (the hook's MMK_PROFILE_*).
type ProfileOptions struct {
	// Runs is how many runs the phase measures after Skip warm-up runs.
	Runs, Skip int
	// RunGap is the pause in launch calls that ends a run.
	RunGap time.Duration
	// Max ends the phase even if runs are missing.
	Max time.Duration
}

// DefaultProfileOptions are mmkctl run's defaults and mmkd's.
func DefaultProfileOptions() ProfileOptions {
	return ProfileOptions{Runs: 50, Skip: 10, RunGap: time.Millisecond, Max: time.Minute}
}

func (o ProfileOptions) validate() error {
	switch {
	case o.Runs < 1:
		return fmt.Errorf("profile runs %d must be at least 1", o.Runs)
	case o.Skip < 0:
		return fmt.Errorf("profile skip %d must not be negative", o.Skip)
	case o.RunGap < time.Microsecond:
		return fmt.Errorf("profile run gap %v must be at least 1µs", o.RunGap)
	case o.Max < time.Second:
		return fmt.Errorf("profile max %v must be at least 1s", o.Max)
	}
	return nil
}

// ProfilePhase is one job's profiling phase: the hook measures its
// kernels for some runs and writes their trace to Trace; Collect turns
// the trace into the task's profile at Dest, in the profile directory the
// kernel scheduler reads (kernelsched.ProfilePath).
type ProfilePhase struct {
	Key, Dest, Trace string
	done             bool
}

// NewProfilePhase prepares the profiling phase of task key in profile
// directory dir: the phase and the environment the hook needs. It returns
// a nil phase when the key has a profile there already. tag makes the
// trace file's name unique among concurrent phases (a pid, a job id).
func NewProfilePhase(dir, key, tag string, o ProfileOptions) (*ProfilePhase, []string, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("profile directory %s: not a directory", dir)
	}
	have, err := kernelsched.LoadProfileFor(dir, key)
	if err != nil {
		return nil, nil, fmt.Errorf("profile directory: %w", err)
	}
	if have != nil {
		return nil, nil, nil
	}
	dest, err := kernelsched.ProfilePath(dir, key)
	if err != nil {
		return nil, nil, fmt.Errorf("task key: %w", err)
	}
	p := &ProfilePhase{Key: key, Dest: dest, Trace: strings.TrimSuffix(dest, ".json") + "." + tag + ".trace.jsonl"}
	env := []string{
		"MMK_PROFILE_OUT=" + p.Trace,
		"MMK_PROFILE_RUNS=" + strconv.Itoa(o.Runs),
		"MMK_PROFILE_SKIP=" + strconv.Itoa(o.Skip),
		"MMK_PROFILE_RUN_GAP_US=" + strconv.FormatInt(max(1, o.RunGap.Microseconds()), 10),
		"MMK_PROFILE_MAX_S=" + strconv.FormatInt(max(1, int64(o.Max.Seconds())), 10),
	}
	return p, env, nil
}

// Done reports that the phase's trace was collected (or failed).
func (p *ProfilePhase) Done() bool { return p.done }

// Collect builds and saves the profile once the hook has written the
// trace. It returns nil and no error while the trace is not there yet; a
// trace that cannot be read ends the phase with the error.
func (p *ProfilePhase) Collect() (*kernelsched.TaskProfile, error) {
	if p.done {
		return nil, nil
	}
	f, err := os.Open(p.Trace)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	p.done = true
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	defer os.Remove(p.Trace)
	defer f.Close()
	kt, err := ReadKernelTrace(p.Trace, f)
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	prof, err := kt.HookProfile(p.Key)
	if err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	// Atomically: the server may read the directory at any moment.
	var buf bytes.Buffer
	if err := kernelsched.WriteProfiles(&buf, []*kernelsched.TaskProfile{prof}); err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	if err := atomicfile.Write(p.Dest, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("profile of %q: %w", p.Key, err)
	}
	return prof, nil
}
