// Command mmkd is mmk's node daemon. It loads the configuration, opens the
// GPU backend (NVML, or fake GPUs where no driver is installed), logs the
// GPUs and their MIG layouts, and serves the HTTP API until SIGINT or
// SIGTERM, then shuts down gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/internal/cli"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/web"
)

// shutdownGrace bounds how long in-flight requests may take at shutdown.
const shutdownGrace = 10 * time.Second

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mmkd:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "mmkd",
		Short:         "mmk node daemon: shares the node's GPUs among deep-learning jobs",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.Flags().String("listen", "127.0.0.1:7070", "host:port of the HTTP API")
	flags := cli.AddConfigFlags(cmd.Flags(), map[string]string{"server.listen": "listen"})
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, flags, nil)
	}
	return cmd
}

// run serves until ctx ends; ready, when set, is told the address served.
func run(ctx context.Context, flags *cli.Flags, ready func(net.Addr)) error {
	cfg, err := flags.Load()
	if err != nil {
		return err
	}
	log := cfg.Log.NewLogger(os.Stderr)
	backend, err := cli.OpenBackend(cfg, log)
	if err != nil {
		return err
	}
	defer backend.Close()
	if err := logInventory(log, backend); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (server.listen): %w", cfg.Server.Listen, err)
	}
	srv := &http.Server{Handler: web.New(backend, log).Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("mmkd serving", "addr", "http://"+ln.Addr().String(), "backend", backend.Name())
	if ready != nil {
		ready(ln.Addr())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("mmkd shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func logInventory(log *slog.Logger, b partitioner.Backend) error {
	gpus, err := partitioner.ReadInventory(b)
	if err != nil {
		return err
	}
	for _, g := range gpus {
		log.Info("GPU", "index", g.Index, "name", g.Name, "model", g.Model, "memoryMiB", g.MemoryMiB,
			"sms", g.SMs, "mig", g.MIG.String(), "layout", g.Layout, "uuid", g.UUID)
	}
	return nil
}
