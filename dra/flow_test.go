package dra

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/structured"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web/mmkdtest"
)

const (
	testNode = "node-1"
	testNS   = "default"
)

// manifests decodes the objects of a YAML file of deployments/kubernetes.
func manifests(t *testing.T, file string) []runtime.Object {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "deployments", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, obj)
	}
	return out
}

// flow is a cluster of one node around a real mmkd on a fake H200: the
// driver runs as the kubelet would have it (kubeletplugin), publishes
// through cs, and claims are allocated by the scheduler's allocator
// library (structured) and prepared through the plugin's gRPC socket.
type flow struct {
	t      *testing.T
	ctx    context.Context
	cs     kubernetes.Interface
	mmkd   *mmkdtest.Daemon
	cdiDir string
	dra    drapb.DRAPluginClient
}

func startFlow(t *testing.T, cs kubernetes.Interface) *flow {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &flow{t: t, ctx: ctx, cs: cs, cdiDir: t.TempDir()}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mmkd = mmkdtest.Start(t, []fakegpu.GPUSpec{{Model: "H200-141GB"}})
	d, err := New(Options{Mmkd: &RESTClient{Base: f.mmkd.URL}, NodeName: testNode, CDIDir: f.cdiDir, GrantWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	plugins, reg := shortTempDir(t), shortTempDir(t)
	helper, err := kubeletplugin.Start(ctx, d, kubeletplugin.KubeClient(cs), kubeletplugin.DriverName(DriverName),
		kubeletplugin.NodeName(testNode), kubeletplugin.PluginDataDirectoryPath(plugins), kubeletplugin.RegistrarDirectoryPath(reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(helper.Stop)
	done := make(chan error, 1)
	go func() { done <- d.Publish(ctx, helper, 50*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient("unix://"+filepath.Join(plugins, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f.dra = drapb.NewDRAPluginClient(conn)
	for _, obj := range manifests(t, "deviceclasses.yaml") {
		if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, obj.(*resourceapi.DeviceClass), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// shortTempDir is a temporary directory with a path short enough for a
// Unix socket in it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mmkdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// slices waits for the driver's ResourceSlices to list n devices.
func (f *flow) slices(n int) []*resourceapi.ResourceSlice {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := f.cs.ResourceV1().ResourceSlices().List(f.ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		var out []*resourceapi.ResourceSlice
		count := 0
		for i := range list.Items {
			if s := &list.Items[i]; s.Spec.Driver == DriverName {
				out = append(out, s)
				count += len(s.Spec.Devices)
			}
		}
		if count == n {
			return out
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("driver's slices list %d devices, want %d", count, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// claim creates a claim from a template of claimtemplates.yaml.
func (f *flow) claim(name, template string) *resourceapi.ResourceClaim {
	f.t.Helper()
	for _, obj := range manifests(f.t, "claimtemplates.yaml") {
		if tpl := obj.(*resourceapi.ResourceClaimTemplate); tpl.Name == template {
			// The API server gives the claim its UID; the fake keeps this one.
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("0c1a-" + name)}, Spec: tpl.Spec.Spec}
			c, err := f.cs.ResourceV1().ResourceClaims(testNS).Create(f.ctx, c, metav1.CreateOptions{})
			if err != nil {
				f.t.Fatal(err)
			}
			return c
		}
	}
	f.t.Fatalf("no template %s", template)
	return nil
}

// classes lists the DeviceClasses for the allocator.
type classes struct{ cs kubernetes.Interface }

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	l, err := c.cs.ResourceV1().DeviceClasses().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*resourceapi.DeviceClass, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	return c.cs.ResourceV1().DeviceClasses().Get(context.Background(), name, metav1.GetOptions{})
}

// allocated is what the allocated claims hold, as the scheduler gathers
// it: whole devices, shares and the capacity they consume.
func (f *flow) allocated() structured.AllocatedState {
	f.t.Helper()
	st := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	list, err := f.cs.ResourceV1().ResourceClaims(testNS).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				st.AllocatedDevices.Insert(id)
				continue
			}
			st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			st.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
	return st
}

// allocate runs the scheduler's allocator on the node for the claim and,
// when it fits, records the allocation reserved for a pod of the claim's
// name. It reports whether it fit.
func (f *flow) allocate(c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, bool) {
	f.t.Helper()
	sl := f.slices(1)
	cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
	a, err := structured.NewAllocator(f.ctx, structured.Features{ConsumableCapacity: true}, f.allocated(), classes{f.cs}, sl, cache)
	if err != nil {
		f.t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	res, err := a.Allocate(f.ctx, node, []*resourceapi.ResourceClaim{c})
	if err != nil {
		f.t.Fatalf("allocate %s: %v", c.Name, err)
	}
	if len(res) == 0 {
		return c, false
	}
	c = c.DeepCopy()
	c.Status.Allocation = &res[0]
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-" + c.Name, UID: "uid-pod-" + c.UID}}
	c, err = f.cs.ResourceV1().ResourceClaims(testNS).UpdateStatus(f.ctx, c, metav1.UpdateOptions{})
	if err != nil {
		f.t.Fatalf("record the allocation of %s: %v", c.Name, err)
	}
	return c, true
}

// prepare asks the plugin over its gRPC socket, as the kubelet does, and
// returns the claim's CDI device ids.
func (f *flow) prepare(c *resourceapi.ResourceClaim) []string {
	f.t.Helper()
	resp, err := f.dra.NodePrepareResources(f.ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil {
		f.t.Fatalf("prepare %s: %v", c.Name, err)
	}
	r := resp.Claims[string(c.UID)]
	if r == nil || r.Error != "" || len(r.Devices) != 1 {
		f.t.Fatalf("prepare %s: %+v", c.Name, r)
	}
	return r.Devices[0].CdiDeviceIds
}

func (f *flow) unprepare(c *resourceapi.ResourceClaim) {
	f.t.Helper()
	resp, err := f.dra.NodeUnprepareResources(f.ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil || resp.Claims[string(c.UID)] == nil || resp.Claims[string(c.UID)].Error != "" {
		f.t.Fatalf("unprepare %s: %v %+v", c.Name, err, resp)
	}
}

// containerEnv is what a container gets from the CDI devices: the spec
// files the driver wrote, applied by the CDI library as a runtime does.
func (f *flow) containerEnv(ids []string) (map[string]string, []string) {
	f.t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(f.cdiDir), cdi.WithAutoRefresh(false))
	if err != nil {
		f.t.Fatal(err)
	}
	oci := &ocispec.Spec{Process: &ocispec.Process{}}
	if unresolved, err := cache.InjectDevices(oci, ids...); err != nil {
		f.t.Fatalf("inject %v: %v (unresolved %v)", ids, err, unresolved)
	}
	env := map[string]string{}
	for _, kv := range oci.Process.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var mounts []string
	for _, m := range oci.Mounts {
		mounts = append(mounts, m.Destination)
	}
	return env, mounts
}

// testClaims is the acceptance flow on the given API: a ResourceSlice
// appears for the fake GPU; an online and an offline claim are allocated
// to it by the allocator and prepared through the plugin's gRPC; each
// claim's CDI spec holds the MPS settings Algorithm 1 chose in mmkd (the
// job's share, 100 % each under priority shares, and client priorities 0
// and 1); a claim whose memory does not fit is refused by the allocator;
// unpreparing releases the claim job, frees its place in mmkd's plan and
// removes the spec.
func testClaims(t *testing.T, cs kubernetes.Interface) {
	f := startFlow(t, cs)
	sl := f.slices(1)
	dev := sl[0].Spec.Devices[0]
	memory := dev.Capacity[CapMemory].Value
	if dev.Name != "gpu0" || *dev.Attributes[AttrModel].StringValue != "H200-141GB" || memory.Value() != 143771<<20 {
		t.Errorf("published device %+v", dev)
	}
	ids := map[string][]string{}
	claims := map[string]*resourceapi.ResourceClaim{}
	for _, tc := range []struct{ name, template string }{{"serve", "online-gpu"}, {"train", "offline-gpu"}} {
		c, ok := f.allocate(f.claim(tc.name, tc.template))
		if !ok {
			t.Fatalf("claim %s did not fit", tc.name)
		}
		claims[tc.name] = c
		ids[tc.name] = f.prepare(c)
	}
	for _, tc := range []struct {
		name, kind, prio string
		mem              int64
	}{{"serve", "online", "0", 8 << 10}, {"train", "offline", "1", 16 << 10}} {
		c := claims[tc.name]
		j, err := f.mmkd.Node.Claim(string(c.UID))
		if err != nil {
			t.Fatal(err)
		}
		env, mounts := f.containerEnv(ids[tc.name])
		if j.State != jobs.Running || string(j.Spec.Kind) != tc.kind || j.MemoryMiB != tc.mem || j.Spec.Claim.Pods[0] != testNS+"/pod-"+tc.name {
			t.Errorf("%s: mmkd's job %s %s, %d MiB, pods %v", tc.name, j.State, j.Spec.Kind, j.MemoryMiB, j.Spec.Claim.Pods)
		}
		want := map[string]string{
			"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": fmt.Sprint(j.Placement.MPSPercent),
			"CUDA_MPS_CLIENT_PRIORITY":          tc.prio,
			"CUDA_VISIBLE_DEVICES":              j.Placement.Device,
			"MMK_JOB_ID":                        j.ID,
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s: container %s=%q, want %q", tc.name, k, env[k], v)
			}
		}
		if j.Placement.MPSPercent != 100 || !slices.Contains(mounts, env["CUDA_MPS_PIPE_DIRECTORY"]) {
			t.Errorf("%s: share %d %% (Algorithm 1 under priority shares gives 100), pipe %q among mounts %v", tc.name, j.Placement.MPSPercent, env["CUDA_MPS_PIPE_DIRECTORY"], mounts)
		}
	}
	// 8 + 16 GiB of the H200's 140 are consumed: 130 GiB do not fit.
	big := f.claim("big", "offline-gpu")
	big.Spec.Devices.Requests[0].Exactly.Capacity.Requests[CapMemory] = mib(130 << 10)
	if _, ok := f.allocate(big); ok {
		t.Error("a claim of 130 GiB was allocated beside 24 GiB on a 140 GiB instance")
	}
	f.unprepare(claims["serve"])
	j, err := f.mmkd.Node.Claim(string(claims["serve"].UID))
	if err != nil || j.State != jobs.Succeeded {
		t.Errorf("after unprepare the job is %s (%v), want succeeded", j.State, err)
	}
	// The placement loop decides after the release and drops the job
	// from its plan.
	for deadline := time.Now().Add(10 * time.Second); holds(f.mmkd.Node.Plan().GPUs[0].Instances, j.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the released job still holds its place")
		}
	}
	if _, err := os.Stat(filepath.Join(f.cdiDir, specName(string(claims["serve"].UID))+".json")); !os.IsNotExist(err) {
		t.Errorf("CDI spec of the released claim: %v", err)
	}
	f.unprepare(claims["serve"]) // the kubelet may ask twice
	f.unprepare(claims["train"])
}

// holds reports an instance that holds the job.
func holds(ins []node.InstanceView, id string) bool {
	return slices.ContainsFunc(ins, func(in node.InstanceView) bool {
		return slices.ContainsFunc(in.Jobs, func(p node.PlacedView) bool { return p.ID == id })
	})
}
