// Command mmkd is mmk's node daemon. It loads the configuration, opens the
// GPU backend (NVML, or fake GPUs where no driver is installed), the job
// store and the runner in its data directory, trains (or loads) the
// predictor, and runs the placement loop and the HTTP API (on its Unix
// socket, where callers are known by their user, and on TCP, where they
// show its token) until SIGINT or SIGTERM, then shuts down gracefully.
// Jobs keep running when mmkd stops; the next mmkd adopts them.
//
// "mmkd shim DIR" is the per-job supervisor (jobs.ShimMain) that the
// runner starts for each job; "mmkd check-store FILE" checks a copy of
// the job store (jobs.CheckStoreMain), a child of mmkd's at start, so
// that a fault on a damaged store kills the child, not mmkd.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/cmd/internal/buildinfo"
	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/web"
)

// shutdownGrace bounds how long in-flight requests may take at shutdown.
const shutdownGrace = 10 * time.Second

func main() {
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(jobs.ShimMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "check-store" {
		os.Exit(jobs.CheckStoreMain(os.Args[2:]))
	}
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
		Version:       buildinfo.Version(),
	}
	cmd.Flags().String("listen", "127.0.0.1:7070", "host:port of the HTTP API (server.listen)")
	cmd.Flags().String("data-dir", "", "job store, job logs, MPS and scheduler state (data_dir; default /var/lib/mmk for root, else ~/.local/state/mmk)")
	flags := cli.AddConfigFlags(cmd.Flags(), map[string]string{"server.listen": "listen", "data_dir": "data-dir"})
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
	if err := applyParted(cfg, backend, log); err != nil {
		return err
	}
	if err := logInventory(log, backend); err != nil {
		return err
	}
	n, closeNode, err := openNode(cfg, backend, log)
	if err != nil {
		return err
	}
	defer closeNode()

	api, err := newAPI(cfg, backend, n, log)
	if err != nil {
		return err
	}
	lns, err := listen(cfg, log)
	if err != nil {
		return err
	}
	defer lns.close()
	srv := web.NewHTTPServer(api.Handler())
	served := make(chan error, len(lns.all))
	for _, ln := range lns.all {
		go func() { served <- srv.Serve(ln) }()
	}
	nodeCtx, stopNode := context.WithCancel(context.Background())
	nodeDone := make(chan error, 1)
	go func() { nodeDone <- n.Run(nodeCtx) }()
	log.Info("mmkd serving", "addr", lns.tcpURL(), "socket", lns.socket, "maxConns", lns.maxConns, "backend", backend.Name(), "version", buildinfo.Version())
	if ready != nil {
		ready(lns.tcpAddr())
	}

	var failed error
	select {
	case err := <-served:
		failed = fmt.Errorf("serve: %w", err)
	case err := <-nodeDone:
		failed = fmt.Errorf("placement loop: %w", err)
		nodeDone <- nil
	case <-ctx.Done():
	}
	log.Info("mmkd shutting down (jobs keep running; the next mmkd adopts them)")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	api.Close() // ends followed log streams, which Shutdown would wait for
	if err := srv.Shutdown(sctx); err != nil && failed == nil {
		failed = fmt.Errorf("shutdown: %w", err)
	}
	stopNode()
	if err := <-nodeDone; err != nil && failed == nil {
		failed = fmt.Errorf("placement loop: %w", err)
	}
	if failed == nil {
		for range lns.all {
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				failed = fmt.Errorf("serve: %w", err)
				break
			}
		}
	}
	return failed
}

// openNode opens the data directory, the store, the runner, MPS, kernel
// scheduling and the predictor, and returns the node and what closes
// them.
func openNode(cfg *configs.Config, backend partitioner.Backend, log *slog.Logger) (*node.Node, func(), error) {
	dir, err := cli.DataDir(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find mmkd's binary for the job supervisor: %w", err)
	}
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: exe, ShimArgs: []string{"shim"},
		LogMaxBytes: cfg.Jobs.LogMaxBytes, StopGrace: cfg.Jobs.StopGrace, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	mpsm, err := openMPS(cfg, backend, dir, log)
	if err != nil {
		return nil, nil, err
	}
	sc, err := schedConfig(cfg, dir, log)
	if err != nil {
		return nil, nil, err
	}
	// node gives offline jobs this client priority wherever MPS runs
	// (Spec.MPSClientPriority), priority shares or not: the estimator is
	// told what the jobs will run at.
	offlinePrio := 0
	if mpsm != nil {
		offlinePrio = jobs.OfflineMPSPriority
	}
	// The predictor (its cache read, or trained) and the store (its
	// check and strict read) are opened side by side: neither reads the
	// other, and each is a good part of a start (some 40 ms and 50 ms on
	// an empty store; restart to ready, bench/restart).
	type estimator struct {
		pred predictor.Estimator
		err  error
	}
	predicted := make(chan estimator, 1)
	go func() {
		pred, err := openEstimator(cfg, backend, dir, offlinePrio, log)
		predicted <- estimator{pred, err}
	}()
	store, err := openStore(filepath.Join(dir, "mmk.db"), log)
	est := <-predicted
	switch {
	case err != nil:
		return nil, nil, err
	case est.err != nil:
		store.Close()
		return nil, nil, est.err
	}
	pred := est.pred
	var sloCfg *node.SLOConfig
	if sc != nil {
		maps, err := loadTPCMaps(cfg.SLO.TPCMaps)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		sloCfg = &node.SLOConfig{Off: !cfg.SLO.Controller, Default: cfg.SLO.Target(), Controller: cfg.SLO.ControllerConfig(), NoHookMarks: !cfg.SLO.HookMarks, TPCMaps: maps,
			StopBound: cfg.SLO.StopBound(), RestrainOthers: cfg.SLO.RestrainOthers, MaskLadder: cfg.SLO.MaskRungs()}
		sloCfg.Mapper, sloCfg.NoMasks = tpcMapper(cfg, backend, sc, dir)
	}
	n, err := node.New(node.Config{
		Backend: backend, Store: store, Runner: runner, Estimator: node.NewEstimator(pred), MPS: mpsm, SLO: sloCfg,
		ManageMIG: cfg.MIG.Manage, PriorityShares: cfg.MPS.PriorityShares, Spread: cfg.Placement.Spread, SLOGuard: cfg.Placement.SLOGuard, SLOMaxWait: cfg.Placement.SLOMaxWait, Move: node.MoveConfig{After: cfg.Placement.MoveAfter, MaxLost: cfg.Placement.MoveMaxLost, ReshareAfter: cfg.Placement.ReshareAfter}, Sched: sc, DefaultMemoryMiB: cfg.Jobs.DefaultMemoryMiB, AllowRoot: cfg.Jobs.AllowRoot,
		MemLimit:   node.MemLimitConfig{Mode: cfg.MPS.MemoryLimit, MarginPct: int(cfg.MPS.MemoryLimitMarginPct), MarginMiB: cfg.MPS.MemoryLimitMarginMiB},
		UsageEvery: usageEvery(cfg.Jobs.UsageInterval),
		StopGrace:  cfg.Jobs.StopGrace, Retention: cfg.Jobs.Retention, BaseEnv: node.BaseEnv(), Log: log,
	})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	log.Info("mmkd data", "dir", dir, "mps", mpsm != nil, "priorityShares", mpsm != nil && cfg.MPS.PriorityShares, "kernelsched", sc != nil, "manageMIG", cfg.MIG.Manage, "spread", cfg.Placement.Spread, "sloGuard", cfg.Placement.SLOGuard,
		"sloController", sc != nil && cfg.SLO.Controller, "sloDefault", cfg.SLO.Default, "sloLadder", strings.Join(cfg.SLO.Ladder, ","))
	ctx, stopBackups := context.WithCancel(context.Background())
	backups := make(chan struct{})
	go func() {
		defer close(backups)
		if cfg.Jobs.BackupEvery > 0 {
			store.BackupEvery(ctx, cfg.Jobs.BackupEvery, log)
		}
	}()
	return n, func() {
		stopBackups()
		<-backups
		if err := store.Close(); err != nil {
			log.Error("close the job store", "err", err)
		}
	}, nil
}

// usageEvery is node.Config.UsageEvery of jobs.usage_interval: 0 is
// never.
func usageEvery(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// openStore opens the job store, checked by a child process ("mmkd
// check-store" on a copy: a fault on a damaged file kills the child,
// not mmkd). A damaged store (jobs.ErrStoreDamaged: the check failed,
// crashed or ran too long) is replaced by its backup, the damaged file
// kept beside it; so is a missing store that has a backup (a deleted
// mmk.db must not start afresh: queued jobs, which have no record in a
// job directory, and idempotency keys would be lost). A store whose
// structure is whole but some of whose records are damaged keeps what
// it holds and gets the damaged records back from the backup
// (jobs.OpenOptions.Backup), losing nothing newer than the backup. Without a usable
// backup mmkd does not start on a damaged store: it must not run on a
// store that has forgotten jobs that still run.
func openStore(path string, log *slog.Logger) (*jobs.Store, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("job store: the check needs mmkd's executable: %w", err)
	}
	backup := path + jobs.BackupSuffix
	o := jobs.OpenOptions{CheckCommand: []string{exe, "check-store"}, CheckTimeout: storeCheckTimeout, Backup: backup}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(backup); err == nil {
			if _, err := jobs.RestoreStoreWith(path, o); err != nil {
				return nil, fmt.Errorf("job store %s is missing and its backup cannot be restored: %w. mmkd does not start afresh beside a backup: move %s aside to start with a new store (jobs with a record in their directory are adopted from it)",
					path, err, backup)
			}
			log.Error("the job store was missing and is restored from its backup; changes after the backup are adopted from the job directories where they can be",
				"store", path, "backup", backup)
		}
	}
	store, err := jobs.OpenStoreWith(path, o)
	if errors.Is(err, jobs.ErrStoreDamaged) {
		kept, rerr := jobs.RestoreStoreWith(path, o)
		if rerr != nil {
			return nil, fmt.Errorf("%w; %v. mmkd does not start on a damaged store: move %s aside (and %s, if it is there) to start with a new one (jobs with a record in their directory are adopted from it) or put a good copy in its place",
				err, rerr, path, backup)
		}
		log.Error("the job store was damaged and is restored from its backup; changes after the backup are adopted from the job directories where they can be",
			"damage", err, "damagedKeptAs", kept, "backup", backup)
		store, err = jobs.OpenStoreWith(path, o)
	}
	if err != nil {
		return nil, err
	}
	return store, nil
}

// storeCheckTimeout bounds the store's check at start (a variable for
// tests).
var storeCheckTimeout = jobs.DefaultCheckTimeout

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
