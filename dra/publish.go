package dra

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// Publisher publishes the driver's ResourceSlices: kubeletplugin.Helper,
// whose resourceslice controller creates, updates and deletes them.
type Publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

// Publish keeps the node's pool in step with mmkd's instances until ctx
// ends: it reads mmkd's plan every interval and publishes the devices
// whenever they changed (at first, and after a MIG change). A plan mmkd
// cannot give is tried again at the next interval.
func (d *Driver) Publish(ctx context.Context, pub Publisher, every time.Duration) error {
	var last *resourceslice.DriverResources
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r, err := d.resources(ctx)
		switch {
		case err != nil:
			d.opt.Log.Warn("publish devices: read mmkd's instances", "err", err)
		case last == nil || !equality.Semantic.DeepEqual(*last, r):
			if err := pub.PublishResources(ctx, r); err != nil {
				return fmt.Errorf("publish devices: %w", err)
			}
			d.opt.Log.Info("devices published", "pool", d.opt.NodeName, "devices", len(r.Pools[d.opt.NodeName].Slices[0].Devices))
			last = &r
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// resources are the devices of mmkd's current plan.
func (d *Driver) resources(ctx context.Context) (resourceslice.DriverResources, error) {
	p, err := d.opt.Mmkd.Plan(ctx)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	return Resources(d.opt.NodeName, p, d.opt.DefaultMemoryMiB), nil
}
