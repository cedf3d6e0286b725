package nvmlbackend

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

func newFakeBackend(t testing.TB, specs ...fakegpu.GPUSpec) (*Backend, *fakegpu.Fake) {
	t.Helper()
	b, f, err := OpenFake(1, specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, f
}

func TestGPUs(t *testing.T) {
	b, _ := newFakeBackend(t,
		fakegpu.GPUSpec{Model: "H200-141GB"},
		fakegpu.GPUSpec{Model: "A100-40GB", MIG: true},
	)
	gpus, err := b.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0 NVIDIA H200 H200-141GB 143771 132 disabled",
		"1 NVIDIA A100-SXM4-40GB A100-40GB 40960 108 enabled",
	}
	for i, g := range gpus {
		got := fmt.Sprintf("%d %s %s %d %d %s", g.Index, g.Name, g.Model, g.MemoryMiB, g.SMs, g.MIG)
		if got != want[i] || !strings.HasPrefix(g.UUID, "GPU-") {
			t.Errorf("GPU %d: %q %s, want %q", i, got, g.UUID, want[i])
		}
	}
}

// TestModelReadFromDeviceEqualsBuiltin reads every model's geometry
// through NVML calls and compares it with the built-in table.
func TestModelReadFromDeviceEqualsBuiltin(t *testing.T) {
	for _, key := range partitioner.ModelKeys() {
		b, _ := newFakeBackend(t, fakegpu.GPUSpec{Model: key})
		got, err := b.Model(0)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := partitioner.LookupModel(key)
		if d := want.Diff(got); d != nil || got.Key != key {
			t.Errorf("%s read as %s: %q", key, got.Key, d)
		}
	}
}

func TestInstances(t *testing.T) {
	b, f := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "1g.10gb@6+4g.40gb@0+2g.20gb@4"})
	insts, err := b.Instances(0)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := b.Model(0)
	l, err := partitioner.LayoutOf(m, insts)
	if err != nil || l.String() != "4g.40gb@0+2g.20gb@4+1g.10gb@6" {
		t.Fatalf("layout %q, %v", l, err)
	}
	gi := insts[1]
	if gi.ID != 2 || gi.SMs != 32 || gi.MemoryMiB != 20096 || len(gi.ComputeInstances) != 1 || !strings.HasPrefix(gi.UUID(), "MIG-") {
		t.Errorf("2g.20gb instance %#v", gi)
	}
	if err := f.AttachProcess(0, gi.UUID(), 99, 700); err != nil {
		t.Fatal(err)
	}
	insts, _ = b.Instances(0)
	if ps := insts[1].Processes(); len(ps) != 1 || ps[0].PID != 99 || ps[0].UsedMemoryMiB != 700 {
		t.Errorf("processes %+v", ps)
	}
}

// TestFakeBackendRefusesWhatHardwareRefuses checks the acceptance cases
// through the backend interface the rest of mmk uses.
func TestFakeBackendRefusesWhatHardwareRefuses(t *testing.T) {
	tests := []struct {
		name    string
		spec    fakegpu.GPUSpec
		op      func(b *Backend) error
		want    error
		message string
	}{
		{"overlapping placement", fakegpu.GPUSpec{Model: "A100-80GB", MIG: true, Layout: "4g.40gb@0"},
			func(b *Backend) error { _, err := b.CreateGPUInstance(0, "2g.20gb", 2); return err },
			partitioner.ErrInsufficientResources, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
		{"disallowed placement", fakegpu.GPUSpec{Model: "A100-80GB", MIG: true},
			func(b *Backend) error { _, err := b.CreateGPUInstance(0, "3g.40gb", 2); return err },
			partitioner.ErrInvalidArgument, "create GPU instance 3g.40gb@2: NVML_ERROR_INVALID_ARGUMENT"},
		{"too many instances", fakegpu.GPUSpec{Model: "H200-141GB", MIG: true, Layout: "1g.18gb+me@0"},
			func(b *Backend) error { _, err := b.CreateGPUInstance(0, "1g.18gb+me", 1); return err },
			partitioner.ErrInsufficientResources, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
		{"unknown profile", fakegpu.GPUSpec{Model: "H200-141GB", MIG: true},
			func(b *Backend) error { _, err := b.CreateGPUInstance(0, "3g.40gb", 0); return err },
			partitioner.ErrInvalidArgument, `no profile "3g.40gb" on H200-141GB`},
		{"destroy order", fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"},
			func(b *Backend) error { return b.DestroyGPUInstance(0, 1) },
			partitioner.ErrBusy, "NVML_ERROR_IN_USE: destroy its compute instances first"},
		{"MIG disabled", fakegpu.GPUSpec{Model: "H100-80GB"},
			func(b *Backend) error { _, err := b.CreateGPUInstance(0, "7g.80gb", 0); return err },
			partitioner.ErrMIGDisabled, "nvidia-smi -i 0 -mig 1"},
		{"no such instance", fakegpu.GPUSpec{Model: "H100-80GB", MIG: true},
			func(b *Backend) error { return b.DestroyGPUInstance(0, 5) },
			partitioner.ErrNotFound, "NVML_ERROR_NOT_FOUND"},
		{"no such GPU", fakegpu.GPUSpec{Model: "H100-80GB", MIG: true},
			func(b *Backend) error { _, err := b.Instances(3); return err },
			partitioner.ErrInvalidArgument, "GPU 3: get handle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newFakeBackend(t, tt.spec)
			err := tt.op(b)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.message) {
				t.Errorf("error = %v, want %v containing %q", err, tt.want, tt.message)
			}
		})
	}
}

func TestBusyInstanceRefused(t *testing.T) {
	b, f := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4"})
	insts, _ := b.Instances(0)
	if err := f.AttachProcess(0, insts[1].UUID(), 1234, 1); err != nil {
		t.Fatal(err)
	}
	err := b.DestroyComputeInstance(0, insts[1].ID, 0)
	var busy *partitioner.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, partitioner.ErrBusy) || !strings.Contains(err.Error(), "3g.40gb@4 is in use by process 1234") {
		t.Errorf("destroy busy compute instance: %v", err)
	}
	m, _ := b.Model(0)
	r, err := partitioner.PlanReconfiguration(m, insts, mustLayout(t, m, "7g.80gb@0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := partitioner.Apply(b, 0, r); !errors.Is(err, partitioner.ErrBusy) {
		t.Errorf("apply over a busy instance: %v", err)
	}
	if after, _ := b.Instances(0); len(after) != 2 || len(after[0].ComputeInstances) != 1 {
		t.Errorf("a refused plan changed the GPU: %+v", after)
	}
	f.DetachProcess(1234)
	if err := partitioner.Apply(b, 0, r); err != nil {
		t.Errorf("apply once idle: %v", err)
	}
}

func mustLayout(t testing.TB, m *partitioner.Model, text string) partitioner.Layout {
	t.Helper()
	l, err := partitioner.ParseLayout(m, text)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestApplyEveryPairOfMaximalA100Layouts applies, on the fake, the plan
// from each of NVIDIA's 19 A100 layouts to each other one, and checks the
// GPU reaches the target and that kept instances keep their ids and MIG
// device UUIDs, so their jobs would keep running.
func TestApplyEveryPairOfMaximalA100Layouts(t *testing.T) {
	m, _ := partitioner.LookupModel("A100-80GB")
	ps, _ := m.SelectProfiles(strings.Split("1g.10gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb", ","))
	layouts := m.MaximalLayouts(ps)
	if len(layouts) != 19 {
		t.Fatalf("%d layouts", len(layouts))
	}
	pairs := 0
	for _, from := range layouts {
		for _, to := range layouts {
			b, _ := newFakeBackend(t, fakegpu.GPUSpec{Model: "A100-80GB", MIG: true, Layout: from.String()})
			before, err := b.Instances(0)
			if err != nil {
				t.Fatal(err)
			}
			r, err := partitioner.PlanReconfiguration(m, before, to)
			if err != nil {
				t.Fatal(err)
			}
			if err := partitioner.Apply(b, 0, r); err != nil {
				t.Fatalf("%s -> %s: %v", from, to, err)
			}
			after, _ := b.Instances(0)
			got, _ := partitioner.LayoutOf(m, after)
			if !got.Equal(to) {
				t.Fatalf("%s -> %s: GPU holds %s", from, to, got)
			}
			for _, k := range r.Kept {
				if !containsSame(after, k) {
					t.Fatalf("%s -> %s: kept instance %s (id %d, %s) was touched", from, to, k, k.ID, k.UUID())
				}
			}
			pairs++
		}
	}
	if pairs != 361 {
		t.Errorf("%d pairs", pairs)
	}
}

func containsSame(insts []partitioner.GPUInstance, k partitioner.GPUInstance) bool {
	for _, gi := range insts {
		if gi.ID == k.ID && gi.String() == k.String() && gi.UUID() == k.UUID() {
			return true
		}
	}
	return false
}

// flaky fails the n-th GPU instance creation, as a driver error midway
// through a reconfiguration would.
type flaky struct {
	*Backend
	n int
}

func (f *flaky) CreateGPUInstance(gpu int, profile string, start int) (int, error) {
	if f.n--; f.n == 0 {
		return 0, &Error{Op: "injected", Code: nvml.ERROR_UNKNOWN}
	}
	return f.Backend.CreateGPUInstance(gpu, profile, start)
}

// TestInterruptedApplyIsFinishedByPlanningAgain checks the recovery path
// Apply documents: plan from the GPU's new state and apply that.
func TestInterruptedApplyIsFinishedByPlanningAgain(t *testing.T) {
	b, _ := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"})
	m, _ := b.Model(0)
	target := mustLayout(t, m, "2g.20gb@0+2g.20gb@2+2g.20gb@4+1g.10gb@6")
	cur, _ := b.Instances(0)
	r, _ := partitioner.PlanReconfiguration(m, cur, target)
	err := partitioner.Apply(&flaky{Backend: b, n: 3}, 0, r)
	if err == nil || !strings.Contains(err.Error(), "step 7 of 10 (create GPU instance 2g.20gb@4): injected: NVML_ERROR_UNKNOWN") {
		t.Fatalf("interrupted apply: %v", err)
	}
	cur, _ = b.Instances(0)
	if err := partitioner.Apply(b, 0, r); err == nil || !strings.Contains(err.Error(), "plan again") {
		t.Errorf("applying a stale plan: %v", err)
	}
	r, err = partitioner.PlanReconfiguration(m, cur, target)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 4 || len(r.Kept) != 2 {
		t.Errorf("second plan has %d steps and keeps %d, want 4 and 2", len(r.Steps), len(r.Kept))
	}
	if err := partitioner.Apply(b, 0, r); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentReads(t *testing.T) {
	b, _ := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0"}, fakegpu.GPUSpec{Model: "A100-40GB"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := b.GPUs(); err != nil {
				t.Error(err)
			}
			if _, err := b.Instances(i % 2); err != nil {
				t.Error(err)
			}
			if id, err := b.CreateGPUInstance(0, "1g.10gb", 4+i%3); err == nil {
				b.DestroyGPUInstance(0, id)
			}
		})
	}
	wg.Wait()
}

// TestOpenWithoutDriver runs where no NVIDIA driver is installed (CI): it
// checks that NVML fails cleanly, says so, and that auto falls back to the
// fake.
func TestOpenWithoutDriver(t *testing.T) {
	if nvml.New().Init() == nvml.SUCCESS {
		t.Skip("an NVIDIA driver is installed")
	}
	_, err := Open(Options{Kind: "nvml"})
	if !errors.Is(err, partitioner.ErrNoDriver) || !strings.Contains(err.Error(), "NVML_ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(err.Error(), "--backend fake") {
		t.Errorf("Open(nvml) without a driver: %v", err)
	}
	b, err := Open(Options{Kind: "auto", FakeGPUs: []fakegpu.GPUSpec{{Model: "H100-80GB"}}})
	if err != nil || b.Name() != "fake" {
		t.Fatalf("Open(auto) without a driver: %v", err)
	}
	b.Close()
}

func TestOpenRejectsUnknownKind(t *testing.T) {
	if _, err := Open(Options{Kind: "cuda"}); err == nil || !strings.Contains(err.Error(), `unknown GPU backend "cuda"`) {
		t.Errorf("Open(cuda): %v", err)
	}
}

func TestCodeName(t *testing.T) {
	if got := CodeName(nvml.ERROR_IN_USE); got != "NVML_ERROR_IN_USE" {
		t.Errorf("CodeName(IN_USE) = %q", got)
	}
	if got := CodeName(nvml.Return(12345)); got != "NVML return code 12345" {
		t.Errorf("CodeName(12345) = %q", got)
	}
}
