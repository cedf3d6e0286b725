package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/kernelsched/server"
)

func newKernelschedCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "kernelsched", Short: "Run a GPU instance's kernel scheduler"}
	var policy, socket, profiles, stats string
	var sms int
	var control, loud bool
	var spin, poll time.Duration
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the kernel scheduler for one GPU instance on a Unix socket until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := server.Config{Socket: socket, Policy: policy, Sched: kernelsched.Config{SMs: sms}, Spin: spin, Poll: poll, Loud: loud, Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}
			if profiles != "" {
				st, err := os.Stat(profiles)
				if err != nil {
					return fmt.Errorf("--profiles: %w", err)
				}
				ps, err := kernelsched.LoadProfilesFrom(profiles)
				if err != nil {
					return err
				}
				cfg.Profiles = ps
				if st.IsDir() {
					cfg.ProfileDir = profiles
				}
			}
			s, err := server.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if control {
				go func() {
					sc := bufio.NewScanner(cmd.InOrStdin())
					for sc.Scan() {
						fmt.Fprintf(cmd.OutOrStdout(), "%s\n", s.Do(ctx, sc.Text()))
					}
				}()
			}
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
	serve.Flags().StringVar(&profiles, "profiles", "", "kernel profiles, selected by task key: a file, or a directory where the profiles of new task keys appear (mmkctl run --profiles)")
	serve.Flags().IntVar(&sms, "sms", kernelsched.DefaultConfig().SMs, "SMs of the GPU instance")
	serve.Flags().DurationVar(&spin, "spin", 50*time.Microsecond, "while some task is held: how long the loop keeps reading the rings after the last launch before it sleeps")
	serve.Flags().DurationVar(&poll, "poll", time.Millisecond, "while no task is held: how often the loop reads the rings (up to 16 times less often while no launch comes)")
	serve.Flags().BoolVar(&loud, "loud", false, "keep every hook's launch callbacks on even while the policy needs none of a task's launches (by default such a task is quiet: its hook reports only synchronisations); for measuring the hook's cost while it reports")
	serve.Flags().StringVar(&stats, "stats", "", "write the counters as JSON to this file on exit")
	serve.Flags().BoolVar(&control, "control", false, "read control lines on stdin (policy NAME [tau=DUR slack=F inflight=DUR floor=F probe-every=N], stats) and answer each with a JSON line on stdout")
	_ = serve.MarkFlagRequired("socket")
	cmd.AddCommand(serve)
	return cmd
}
