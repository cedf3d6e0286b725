// Command mmk-dra is mmk's Kubernetes DRA driver: a kubelet plugin run on
// each GPU node (a DaemonSet, deployments/kubernetes/daemonset.yaml) beside
// mmkd. It publishes mmkd's GPU instances as devices and prepares the
// claims allocated to them through mmkd's API (package dra,
// docs/kubernetes.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/mmkgpu/mmk/cmd/internal/buildinfo"
	"github.com/mmkgpu/mmk/dra"
)

// options are the command's flags.
type options struct {
	mmkd, token, node, kubeconfig  string
	cdiDir, pluginDir, registryDir string
	nvidiaCDIKind                  string
	defaultMemoryMiB               int64
	publishEvery, grantWait        time.Duration
	logLevel                       string
}

func main() {
	if err := command().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mmk-dra:", err)
		os.Exit(1)
	}
}

func command() *cobra.Command {
	o := options{}
	cmd := &cobra.Command{
		Use:           "mmk-dra",
		Short:         "mmk's DRA kubelet plugin: mmkd's GPU instances as Kubernetes devices",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.mmkd, "mmkd", envOr("MMK_ADDR", "http://127.0.0.1:7070"), "mmkd's API address (MMK_ADDR)")
	f.StringVar(&o.token, "token", os.Getenv("MMK_TOKEN"), "mmkd's bearer token (MMK_TOKEN)")
	f.StringVar(&o.node, "node-name", os.Getenv("NODE_NAME"), "this node's name: the pool of its devices (NODE_NAME)")
	f.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty: the pod's service account")
	f.StringVar(&o.cdiDir, "cdi-dir", "/var/run/cdi", "where the container runtime reads CDI specs")
	f.StringVar(&o.pluginDir, "plugin-dir", kubeletplugin.KubeletPluginsDir+"/"+dra.DriverName, "the plugin's socket directory")
	f.StringVar(&o.registryDir, "registry-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	f.StringVar(&o.nvidiaCDIKind, "nvidia-cdi-kind", "", "add NVIDIA's CDI device of each claim's instance, e.g. nvidia.com/gpu (nvidia-ctk cdi generate --device-name-strategy=uuid)")
	f.Int64Var(&o.defaultMemoryMiB, "default-memory-mib", 4096, "memory a claim consumes when it names none (mmkd's jobs.default_memory_mib)")
	f.DurationVar(&o.publishEvery, "publish-interval", 5*time.Second, "how often mmkd's instances are read and republished when changed")
	f.DurationVar(&o.grantWait, "grant-wait", 30*time.Second, "how long a preparation waits for mmkd to place a claim")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// run serves the kubelet until ctx ends.
func run(ctx context.Context, o options) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", o.logLevel, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if o.node == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	if o.publishEvery <= 0 {
		return fmt.Errorf("--publish-interval %s: must be positive", o.publishEvery)
	}
	cfg, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	d, err := dra.New(dra.Options{Mmkd: &dra.RESTClient{Base: o.mmkd, Token: o.token}, NodeName: o.node, CDIDir: o.cdiDir,
		NvidiaCDIKind: o.nvidiaCDIKind, DefaultMemoryMiB: o.defaultMemoryMiB, GrantWait: o.grantWait, Log: log})
	if err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, d, kubeletplugin.KubeClient(cs), kubeletplugin.DriverName(dra.DriverName),
		kubeletplugin.NodeName(o.node), kubeletplugin.PluginDataDirectoryPath(o.pluginDir), kubeletplugin.RegistrarDirectoryPath(o.registryDir))
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	log.Info("serving the kubelet", "driver", dra.DriverName, "node", o.node, "mmkd", o.mmkd)
	return d.Publish(ctx, helper, o.publishEvery)
}

// kubeConfig is the kubeconfig file's configuration, or the pod's
// service account without one.
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (or give --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
