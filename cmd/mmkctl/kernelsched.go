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
	"github.com/mmkgpu/mmk/slo"
)

func newKernelschedCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "kernelsched", Short: "Run a GPU instance's kernel scheduler"}
	var policy, socket, profiles, stats string
	var sms int
	var control, loud, sloOff bool
	var spin, poll time.Duration
	var targets []string
	var ladder, requests, tpcMap string
	var aim float64
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the kernel scheduler for one GPU instance on a Unix socket until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := slo.CheckAim(aim); err != nil {
				return fmt.Errorf("--slo-aim: %w", err)
			}
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
			if tpcMap != "" {
				b, err := os.ReadFile(tpcMap)
				if err != nil {
					return fmt.Errorf("--tpc-map: %w", err)
				}
				if cfg.TPCMap, err = slo.ParseTPCMap(b); err != nil {
					return fmt.Errorf("--tpc-map %s: %w", tpcMap, err)
				}
			}
			if len(targets) > 0 || ladder != "" {
				sc, err := sloConfig(targets, ladder, aim, sloOff)
				if err != nil {
					return err
				}
				st, err := newStopper(socket)
				if err != nil {
					return err
				}
				sc.Suspend = st.suspend
				cfg.SLO = sc
			}
			if requests != "" {
				f, err := os.Create(requests)
				if err != nil {
					return fmt.Errorf("--requests: %w", err)
				}
				defer f.Close()
				cfg.RequestLog = f
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
	serve.Flags().BoolVar(&control, "control", false, "read control lines on stdin (policy NAME [tau=DUR slack=F inflight=DUR floor=F probe-every=N], loud 0|1, stats, slo on|off|status, slo aim F, slo target NAME TARGET) and answer each with a JSON line on stdout")
	serve.Flags().StringArrayVar(&targets, "slo", nil, "NAME=TARGET: the latency target of the online tasks named NAME (p99=20ms, p99=1.5x); turns the latency controller on (repeatable)")
	serve.Flags().Float64Var(&aim, "slo-aim", slo.DefaultConfig().Aim, "the share of each target's budget the latency controller aims for, in (0, 1]: at 0.5 a rung holds a service when a window of its requests is forecast to have at most half the late requests its target allows")
	serve.Flags().StringVar(&ladder, "slo-ladder", "", "the latency controller's rungs, cheapest first, comma-separated (default "+strings.Join(slo.DefaultLadder().Strings(), ",")+"); turns it on")
	serve.Flags().StringVar(&requests, "requests", "", "write every online request measured to this file, a JSON line each (source hook or reported, pid, name, end and latency in ns)")
	serve.Flags().StringVar(&tpcMap, "tpc-map", "", "which of the GPU's TPC mask slots are TPCs, as bench/gpu/tpcmap.py writes it: a mask to a share of the TPCs then keeps that share (without it the first slots are taken for TPCs, and an H100's holes among them are not)")
	serve.Flags().BoolVar(&sloOff, "slo-off", false, "start the latency controller off (the control line slo on turns it on)")
	_ = serve.MarkFlagRequired("socket")
	cmd.AddCommand(serve)
	return cmd
}

// sloConfig is the latency controller of the serve command's flags: the
// targets by task name, the ladder, the aim (checked by the command);
// the command gives it its suspension (stopper).
func sloConfig(targets []string, ladder string, aim float64, off bool) (*server.SLOConfig, error) {
	c := &server.SLOConfig{Targets: map[string]slo.Target{}, Off: off}
	c.Controller.Aim = aim
	for _, kv := range targets {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--slo %q: want NAME=TARGET, such as svc=p99=20ms", kv)
		}
		t, err := slo.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("--slo %s: %w", name, err)
		}
		c.Targets[name] = t
	}
	if ladder != "" {
		l, err := slo.ParseLadder(strings.Split(ladder, ","))
		if err == nil {
			err = l.Check()
		}
		if err != nil {
			return nil, fmt.Errorf("--slo-ladder: %w", err)
		}
		c.Controller.Ladder = l
	}
	return c, nil
}
