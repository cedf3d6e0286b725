package dra

import (
	"context"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web/mmkdtest"
)

// allocatedClaim is a claim allocated to one device of the node's pool,
// as the scheduler leaves it for the kubelet.
func allocatedClaim(name, device string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("0c1a-" + name)},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: DriverName, Pool: testNode, Device: device,
					ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{CapMemory: mib(1024)}}},
			}},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-" + name}},
		},
	}
}

// TestDeviceNamesAreInstanceNames (issue 37, item 5): on a MIG GPU the
// driver publishes each instance under its name as a DNS label
// ("gpu0/gi2" as "gpu0-gi2"), and a claim allocated to that device is
// prepared on that instance, mmkd's claim job naming it "gpu0/gi2". A
// claim allocated before, to the device named after the instance's key
// ("gpu0-3g-40gb-at4"), is prepared there too; and one whose claim job
// the driver of before prepared with the key is the same job when the
// kubelet prepares it again (no conflict).
func TestDeviceNamesAreInstanceNames(t *testing.T) {
	d := mmkdtest.Start(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}})
	mmkd := &RESTClient{Base: d.URL}
	drv, err := New(Options{Mmkd: mmkd, NodeName: testNode, CDIDir: t.TempDir(), GrantWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]string{} // device name -> instance name
	var name, key string        // the 3g instance's
	for _, in := range d.Node.Plan().GPUs[0].Instances {
		want[strings.ReplaceAll(in.Name, "/", "-")] = in.Name
		if in.Profile == "3g.40gb" {
			name, key = in.Name, in.Key
		}
	}
	r, err := drv.resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	devs := r.Pools[testNode].Slices[0].Devices
	for _, dev := range devs {
		if _, ok := want[dev.Name]; !ok {
			t.Errorf("published device %q, want one of %v (the instances' names)", dev.Name, want)
		}
	}
	if len(devs) != len(want) {
		t.Errorf("%d devices published, want %d", len(devs), len(want))
	}
	device, legacy := DeviceName(name), DeviceName(key)
	if !strings.HasPrefix(device, "gpu0-gi") || legacy != "gpu0-3g-40gb-at4" {
		t.Fatalf("the 3g instance %s is published as %s, before as %s", name, device, legacy)
	}
	// An old driver's claim job: prepared with the key.
	old := claimSpec(allocatedClaim("old", legacy), allocatedClaim("old", legacy).Status.Allocation.Devices.Results[0], Instance{Key: key}, ClaimConfig{Type: jobs.Offline})
	oldJob, err := mmkd.PrepareClaim(ctx, old, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	claims := []*resourceapi.ResourceClaim{allocatedClaim("new", device), allocatedClaim("before", legacy), allocatedClaim("old", legacy)}
	res, err := drv.PrepareResourceClaims(ctx, claims)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if res[c.UID].Err != nil || len(res[c.UID].Devices) != 1 {
			t.Errorf("prepare %s (device %s): %+v", c.Name, c.Status.Allocation.Devices.Results[0].Device, res[c.UID])
			continue
		}
		j, err := d.Node.Claim(string(c.UID))
		if err != nil {
			t.Fatal(err)
		}
		if j.State != jobs.Running || j.Placement.InstanceName != name {
			t.Errorf("claim %s: job %s %s in %q, want running in %s", c.Name, j.ID, j.State, j.Placement.InstanceName, name)
		}
		if c.Name != "old" && j.Spec.Claim.Instance != name {
			t.Errorf("claim %s: the job records instance %q, want %s", c.Name, j.Spec.Claim.Instance, name)
		}
		if c.Name == "old" && j.ID != oldJob.ID {
			t.Errorf("claim old prepared again: job %s, want the old driver's %s", j.ID, oldJob.ID)
		}
	}
	if _, err := drv.UnprepareResourceClaims(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if err := mmkd.ReleaseClaim(ctx, string(c.UID)); err != nil {
			t.Error(err)
		}
	}
}
