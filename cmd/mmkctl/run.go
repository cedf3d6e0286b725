package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/trace"
)

// runFlags are the flags of `mmkctl run`.
type runFlags struct {
	priority      int
	online        bool
	taskKey, name string
	socket, hook  string
	cupti         string
	// The profiling phase.
	profiles              string
	profileRuns, skipRuns int
	runGap, profileMax    time.Duration
}

func newRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command with the hook attached and the kernel scheduler's environment",
		Long: "Runs CMD with the hook attached. With --profiles DIR and a --task-key that has no\n" +
			"profile in DIR yet, the hook first profiles the job's kernels on the GPU for\n" +
			"--profile-runs runs; mmkctl then writes the task's profile into DIR, where\n" +
			"`mmkctl kernelsched serve --profiles DIR` picks it up.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, prof, err := f.env()
			if err != nil {
				return err
			}
			c := exec.CommandContext(cmd.Context(), args[0], args[1:]...)
			c.Env = append(os.Environ(), env...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := c.Start(); err != nil {
				return err
			}
			ctx, stop := context.WithCancel(cmd.Context())
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				if prof != nil {
					prof.watch(ctx, cmd.ErrOrStderr())
				}
			}()
			err = c.Wait()
			stop()
			<-watched
			if prof != nil {
				prof.collect(cmd.ErrOrStderr())
			}
			if ee, ok := err.(*exec.ExitError); ok {
				os.Exit(ee.ExitCode())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.priority, "priority", 0, "task priority, 0 (highest) to 9")
	fl.BoolVar(&f.online, "online", false, "latency-critical task")
	fl.StringVar(&f.taskKey, "task-key", "", "task key selecting the kernel profile")
	fl.StringVar(&f.name, "name", "", "task name shown by the scheduler (default: the command)")
	fl.StringVar(&f.socket, "socket", os.Getenv("MMK_SCHED_SOCKET"), "kernel scheduler socket (empty: the hook only counts)")
	fl.StringVar(&f.hook, "hook", "", "the hook library (default: libmmkhook.so next to mmkctl)")
	fl.StringVar(&f.cupti, "cupti", os.Getenv("MMK_CUPTI_PATH"), "libcupti to load (default: the hook's search)")
	fl.StringVar(&f.profiles, "profiles", os.Getenv("MMK_PROFILES"), "kernel profile directory; a task key with no profile there is profiled first")
	fl.IntVar(&f.profileRuns, "profile-runs", 50, "runs the profiling phase measures")
	fl.IntVar(&f.skipRuns, "profile-skip", 10, "warm-up runs the profiling phase leaves out")
	fl.DurationVar(&f.runGap, "profile-run-gap", time.Millisecond, "a pause in launch calls this long ends a run")
	fl.DurationVar(&f.profileMax, "profile-max", time.Minute, "the profiling phase ends after this long even if runs are missing")
	return cmd
}

// env is the environment the hooked command gets, and the profiling
// phase to collect (nil: none).
func (f *runFlags) env() ([]string, *profilePhase, error) {
	if f.priority < 0 || f.priority >= kernelsched.NumPriorities {
		return nil, nil, fmt.Errorf("--priority %d is outside 0..%d", f.priority, kernelsched.NumPriorities-1)
	}
	hook := f.hook
	if hook == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("find the hook: %w", err)
		}
		hook = filepath.Join(filepath.Dir(exe), "libmmkhook.so")
	}
	abs, err := filepath.Abs(hook)
	if err != nil {
		return nil, nil, fmt.Errorf("--hook %s: %w", hook, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, nil, fmt.Errorf("--hook %s: %w (build it with make hook)", abs, err)
	}
	env := []string{"CUDA_INJECTION64_PATH=" + abs, "MMK_PRIORITY=" + strconv.Itoa(f.priority), "MMK_TASK_KEY=" + f.taskKey, "MMK_TASK_NAME=" + f.name}
	if f.online {
		env = append(env, "MMK_ONLINE=1")
	}
	if f.socket != "" {
		env = append(env, "MMK_SCHED_SOCKET="+f.socket)
	}
	if f.cupti != "" {
		env = append(env, "MMK_CUPTI_PATH="+f.cupti)
	}
	prof, penv, err := f.profiling()
	if err != nil {
		return nil, nil, err
	}
	return append(env, penv...), prof, nil
}

// profiling decides whether the job is profiled first.
func (f *runFlags) profiling() (*profilePhase, []string, error) {
	if f.profiles == "" {
		return nil, nil, nil
	}
	switch {
	case f.taskKey == "":
		return nil, nil, fmt.Errorf("--profiles %s needs a --task-key to profile under", f.profiles)
	case f.profileRuns < 1:
		return nil, nil, fmt.Errorf("--profile-runs %d must be at least 1", f.profileRuns)
	case f.skipRuns < 0:
		return nil, nil, fmt.Errorf("--profile-skip %d must not be negative", f.skipRuns)
	case f.runGap < time.Microsecond:
		return nil, nil, fmt.Errorf("--profile-run-gap %v must be at least 1µs", f.runGap)
	case f.profileMax < time.Second:
		return nil, nil, fmt.Errorf("--profile-max %v must be at least 1s", f.profileMax)
	}
	if st, err := os.Stat(f.profiles); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("--profiles %s: not a directory", f.profiles)
	}
	have, err := kernelsched.LoadProfileFor(f.profiles, f.taskKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--profiles: %w", err)
	}
	if have != nil {
		return nil, nil, nil
	}
	dest, err := kernelsched.ProfilePath(f.profiles, f.taskKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--task-key: %w", err)
	}
	p := &profilePhase{key: f.taskKey, dest: dest, trace: strings.TrimSuffix(dest, ".json") + fmt.Sprintf(".%d.trace.jsonl", os.Getpid())}
	env := []string{
		"MMK_PROFILE_OUT=" + p.trace,
		"MMK_PROFILE_RUNS=" + strconv.Itoa(f.profileRuns),
		"MMK_PROFILE_SKIP=" + strconv.Itoa(f.skipRuns),
		"MMK_PROFILE_RUN_GAP_US=" + strconv.FormatInt(max(1, f.runGap.Microseconds()), 10),
		"MMK_PROFILE_MAX_S=" + strconv.FormatInt(max(1, int64(f.profileMax.Seconds())), 10),
	}
	return p, env, nil
}

// profilePhase is one job's profiling phase: the hook writes its kernel trace
// to trace when the phase ends; mmkctl turns it into the profile at dest.
type profilePhase struct {
	key, dest, trace string
	done             bool
}

// watch collects the profile as soon as the hook has written it.
func (p *profilePhase) watch(ctx context.Context, log io.Writer) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !p.done {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			p.collect(log)
		}
	}
}

// collect builds and saves the profile if the hook's trace is there.
func (p *profilePhase) collect(log io.Writer) {
	if p.done {
		return
	}
	f, err := os.Open(p.trace)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	p.done = true
	if err != nil {
		fmt.Fprintf(log, "mmkctl run: profile of %q: %v\n", p.key, err)
		return
	}
	defer os.Remove(p.trace)
	defer f.Close()
	kt, err := trace.ReadKernelTrace(p.trace, f)
	if err != nil {
		fmt.Fprintf(log, "mmkctl run: profile of %q: %v\n", p.key, err)
		return
	}
	prof, err := kt.HookProfile(p.key)
	if err != nil {
		fmt.Fprintf(log, "mmkctl run: profile of %q: %v\n", p.key, err)
		return
	}
	if err := kernelsched.SaveProfiles(p.dest, []*kernelsched.TaskProfile{prof}); err != nil {
		fmt.Fprintf(log, "mmkctl run: profile of %q: %v\n", p.key, err)
		return
	}
	fmt.Fprintf(log, "mmkctl run: profile of %q: %d runs, %.0f kernels per run, %d kernel ids, written to %s\n",
		p.key, prof.Runs, prof.RunKernels, len(prof.Kernels), p.dest)
}
