package dra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/mmkgpu/mmk/jobs"
)

// Options configure a Driver.
type Options struct {
	// Mmkd is the node's mmkd.
	Mmkd Mmkd
	// NodeName names the node and its pool.
	NodeName string
	// CDIDir is where claims' CDI specs go (the container runtime's CDI
	// directory, default /var/run/cdi).
	CDIDir string
	// NvidiaCDIKind, when set (nvidia.com/gpu), adds to each claim the
	// CDI device of its instance from NVIDIA's spec (nvidia-ctk cdi
	// generate --device-name-strategy=uuid): the device nodes and driver
	// libraries, which mmk's spec does not carry.
	NvidiaCDIKind string
	// DefaultMemoryMiB is the memory a claim consumes when its request
	// names none (mmkd's jobs.default_memory_mib).
	DefaultMemoryMiB int64
	// GrantWait bounds how long a preparation waits for mmkd to grant a
	// claim its place (default 30 s); a claim still waiting fails this
	// preparation, and the kubelet asks again.
	GrantWait time.Duration
	Log       *slog.Logger
}

// Driver is mmk's DRA kubelet plugin (kubeletplugin.DRAPlugin).
type Driver struct {
	opt Options
	cdi *cdiSpecs
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New checks the options and opens the CDI directory.
func New(opt Options) (*Driver, error) {
	if opt.Mmkd == nil || opt.NodeName == "" {
		return nil, errors.New("dra: mmkd and the node name are required")
	}
	if opt.CDIDir == "" {
		opt.CDIDir = "/var/run/cdi"
	}
	if opt.DefaultMemoryMiB <= 0 {
		opt.DefaultMemoryMiB = 4096
	}
	if opt.GrantWait <= 0 {
		opt.GrantWait = 30 * time.Second
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	specs, err := newCDISpecs(opt.CDIDir)
	if err != nil {
		return nil, fmt.Errorf("dra: %w", err)
	}
	return &Driver{opt: opt, cdi: specs}, nil
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin: each claim
// becomes a claim job of mmkd's in its allocated instance, and its grant a
// CDI device. A claim mmkd cannot place yet fails this call alone; the
// kubelet asks again.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	if len(claims) == 0 {
		return out, nil
	}
	plan, err := d.opt.Mmkd.Plan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read mmkd's instances: %w", err)
	}
	for _, c := range claims {
		devs, err := d.prepare(ctx, plan, c)
		if err != nil {
			d.opt.Log.Warn("prepare claim", "claim", c.Namespace+"/"+c.Name, "uid", c.UID, "err", err)
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devs, Err: err}
	}
	return out, nil
}

// prepare prepares one claim.
func (d *Driver) prepare(ctx context.Context, plan Plan, c *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)
	}
	var mine []resourceapi.DeviceRequestAllocationResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == DriverName {
			mine = append(mine, r)
		}
	}
	if len(mine) != 1 {
		return nil, fmt.Errorf("claim %s/%s has %d devices of %s: an mmk claim takes one instance", c.Namespace, c.Name, len(mine), DriverName)
	}
	r := mine[0]
	in, ok := instanceOf(plan, r.Device)
	if r.Pool != d.opt.NodeName || !ok {
		return nil, fmt.Errorf("claim %s/%s: device %s/%s is not an instance of this node's mmkd", c.Namespace, c.Name, r.Pool, r.Device)
	}
	cfg, err := claimConfig(c.Status.Allocation.Devices.Config, r.Request)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	spec := claimSpec(c, r, in, cfg)
	job, err := d.opt.Mmkd.PrepareClaim(ctx, spec, d.opt.GrantWait)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if job.State != jobs.Running || job.Grant == nil {
		return nil, fmt.Errorf("claim %s/%s: mmkd's job %s is %s in %s: %s", c.Namespace, c.Name, job.ID, job.State, in.Key, job.Reason)
	}
	ids := []string{}
	id, err := d.cdi.write(string(c.UID), *job.Grant)
	if err != nil {
		return nil, err
	}
	ids = append(ids, id)
	if d.opt.NvidiaCDIKind != "" {
		ids = append(ids, d.opt.NvidiaCDIKind+"="+in.Device)
	}
	d.opt.Log.Info("claim prepared", "claim", c.Namespace+"/"+c.Name, "job", job.ID, "instance", in.Key, "mpsPercent", job.Placement.MPSPercent, "type", job.Spec.Kind)
	return []kubeletplugin.Device{{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: ids, ShareID: r.ShareID}}, nil
}

// claimSpec is the claim job mmkd is asked for: the claim's identity and
// pods, its instance, its memory (what the allocation consumed) and the
// configuration's kind, priorities and workload.
func claimSpec(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult, in Instance, cfg ClaimConfig) jobs.Spec {
	claim := &jobs.Claim{Namespace: c.Namespace, Name: c.Name, UID: string(c.UID), Instance: in.Key, Device: r.Pool + "/" + r.Device}
	for _, ref := range c.Status.ReservedFor {
		if ref.Resource == "pods" && ref.APIGroup == "" {
			claim.Pods = append(claim.Pods, c.Namespace+"/"+ref.Name)
		}
	}
	spec := jobs.Spec{Kind: cfg.Type, Priority: cfg.Priority, MPSPriority: cfg.MPSPriority, Workload: cfg.Workload, TaskKey: cfg.TaskKey, SLO: cfg.SLO, Claim: claim}
	if q, ok := r.ConsumedCapacity[CapMemory]; ok {
		spec.MemoryMiB = (q.Value() + 1<<20 - 1) >> 20
	}
	return spec
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin: each
// claim's job is released (its share is free) and its CDI spec removed.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := d.opt.Mmkd.ReleaseClaim(ctx, string(c.UID))
		if err == nil {
			err = d.cdi.remove(string(c.UID))
		}
		if err != nil {
			d.opt.Log.Warn("unprepare claim", "claim", c.String(), "uid", c.UID, "err", err)
		}
		out[c.UID] = err
	}
	return out, nil
}

// HandleError implements kubeletplugin.DRAPlugin: background errors
// (publishing slices) are logged; the resourceslice controller retries
// them, and a slice the API server refuses stays refused until mmkd's
// instances change.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.opt.Log.Error(msg, "err", err, "recoverable", errors.Is(err, kubeletplugin.ErrRecoverable))
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: mmk reports no
// device health (mmkd's readiness covers its GPUs).
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
