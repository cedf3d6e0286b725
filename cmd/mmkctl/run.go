package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/mps"
	"github.com/mmkgpu/mmk/trace"
)

// runFlags are the flags of `mmkctl run`.
type runFlags struct {
	priority      int
	mpsPriority   int
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
	fl.IntVar(&f.mpsPriority, "mps-priority", -1, "MPS client priority (CUDA_MPS_CLIENT_PRIORITY), 0 normal or 1 below normal (default: the environment's, else 0 with --online and 1 without)")
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
	switch {
	case f.mpsPriority == mps.PriorityNormal || f.mpsPriority == mps.PriorityBelowNormal:
		env = append(env, mps.PriorityEnv+"="+strconv.Itoa(f.mpsPriority))
	case f.mpsPriority != -1:
		return nil, nil, fmt.Errorf("--mps-priority %d is not 0 (normal) or 1 (below normal)", f.mpsPriority)
	case os.Getenv(mps.PriorityEnv) != "":
		// The caller chose it.
	case f.online:
		env = append(env, mps.PriorityEnv+"="+strconv.Itoa(mps.PriorityNormal))
	default:
		env = append(env, mps.PriorityEnv+"="+strconv.Itoa(mps.PriorityBelowNormal))
	}
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
	if f.taskKey == "" {
		return nil, nil, fmt.Errorf("--profiles %s needs a --task-key to profile under", f.profiles)
	}
	p, env, err := trace.NewProfilePhase(f.profiles, f.taskKey, strconv.Itoa(os.Getpid()),
		trace.ProfileOptions{Runs: f.profileRuns, Skip: f.skipRuns, RunGap: f.runGap, Max: f.profileMax})
	if err != nil {
		return nil, nil, fmt.Errorf("--profiles: %w", err)
	}
	if p == nil {
		return nil, nil, nil
	}
	return &profilePhase{p}, env, nil
}

// profilePhase is the job's profiling phase, collected as soon as the
// hook has written its trace.
type profilePhase struct{ *trace.ProfilePhase }

// watch collects the profile as soon as the hook has written it.
func (p *profilePhase) watch(ctx context.Context, log io.Writer) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !p.Done() {
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
	prof, err := p.Collect()
	if err != nil {
		fmt.Fprintf(log, "mmkctl run: %v\n", err)
		return
	}
	if prof != nil {
		fmt.Fprintf(log, "mmkctl run: profile of %q: %d runs, %.0f kernels per run, %d kernel ids, written to %s\n",
			p.Key, prof.Runs, prof.RunKernels, len(prof.Kernels), p.Dest)
	}
}
