package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

func newKernelschedCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "kernelsched", Short: "Run a GPU instance's kernel scheduler"}
	var policy, socket, profiles, stats string
	var sms int
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the kernel scheduler for one GPU instance on a Unix socket until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := server.Config{Socket: socket, Policy: policy, Sched: kernelsched.Config{SMs: sms}, Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}
			if profiles != "" {
				ps, err := kernelsched.LoadProfiles(profiles)
				if err != nil {
					return err
				}
				cfg.Profiles = ps
			}
			s, err := server.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = s.Serve(ctx)
			c := s.Counters()
			if stats != "" {
				b, _ := json.Marshal(c)
				if werr := os.WriteFile(stats, append(b, '\n'), 0o644); werr != nil && err == nil {
					err = fmt.Errorf("write --stats %s: %w", stats, werr)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kernels %d (at once %d, held %d, filled %d), fail-opens %d, refused %d\n",
				c.Kernels, c.AtOnce, c.Held, c.Filled, c.FailOpens, c.Refused)
			return err
		},
	}
	serve.Flags().StringVar(&policy, "policy", "fikit", "policy: "+strings.Join(kernelsched.Policies(), ", "))
	serve.Flags().StringVar(&socket, "socket", "", "Unix socket path hooks connect to (MMK_SCHED_SOCKET)")
	serve.Flags().StringVar(&profiles, "profiles", "", "kernel profiles file (JSON), selected by task key")
	serve.Flags().IntVar(&sms, "sms", kernelsched.DefaultConfig().SMs, "SMs of the GPU instance")
	serve.Flags().StringVar(&stats, "stats", "", "write the counters as JSON to this file on exit")
	_ = serve.MarkFlagRequired("socket")
	cmd.AddCommand(serve)
	return cmd
}

// runFlags are the flags of `mmkctl run`.
type runFlags struct {
	priority      int
	online        bool
	taskKey, name string
	socket, hook  string
	cupti         string
}

func newRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command with the hook attached and the kernel scheduler's environment",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := f.env()
			if err != nil {
				return err
			}
			c := exec.CommandContext(cmd.Context(), args[0], args[1:]...)
			c.Env = append(os.Environ(), env...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			err = c.Run()
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
	return cmd
}

// env is the environment the hooked command gets.
func (f *runFlags) env() ([]string, error) {
	if f.priority < 0 || f.priority >= kernelsched.NumPriorities {
		return nil, fmt.Errorf("--priority %d is outside 0..%d", f.priority, kernelsched.NumPriorities-1)
	}
	hook := f.hook
	if hook == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the hook: %w", err)
		}
		hook = filepath.Join(filepath.Dir(exe), "libmmkhook.so")
	}
	abs, err := filepath.Abs(hook)
	if err != nil {
		return nil, fmt.Errorf("--hook %s: %w", hook, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("--hook %s: %w (build it with make hook)", abs, err)
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
	return env, nil
}
