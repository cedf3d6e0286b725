package nvmlbackend

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// TestHealth: each GPU's utilisation (unknown with MIG, saying why),
// power and its limit, temperature, uncorrectable ECC errors and the XID
// errors seen since the first read, as the fake reports them at the
// fake's time.
func TestHealth(t *testing.T) {
	b, f := newFakeBackend(t, fakegpu.GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"}, fakegpu.GPUSpec{Model: "H200-141GB"})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.SetClock(func() time.Time { return at })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.AttachProcess(1, "", 20, 2048))
	must(f.SetProcessUtilization(20, 40, 10))
	gpus, err := b.GPUs()
	must(err)
	// What the fake's handles answer at this time.
	raw := func(i int) (powerW, limitW float64, tempC int) {
		d, _ := f.DeviceGetHandleByIndex(i)
		p, _ := d.GetPowerUsage()
		l, _ := d.GetEnforcedPowerLimit()
		c, _ := d.GetTemperature(nvml.TEMPERATURE_GPU)
		return float64(p) / 1000, float64(l) / 1000, int(c)
	}
	p0, l0, c0 := raw(0)
	p1, l1, c1 := raw(1)
	got, err := b.Health()
	must(err)
	want := []partitioner.GPUHealth{
		{GPU: 0, UUID: gpus[0].UUID, PowerW: &p0, PowerLimitW: &l0, TempC: &c0, ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0),
			Unknown: map[string]string{"utilPct": "NVML_ERROR_NOT_SUPPORTED", "memUtilPct": "NVML_ERROR_NOT_SUPPORTED"}},
		{GPU: 1, UUID: gpus[1].UUID, UtilPct: ptr(40), MemUtilPct: ptr(10), PowerW: &p1, PowerLimitW: &l1, TempC: &c1,
			ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("health\n%s\nwant\n%s", show(got), show(want))
	}
	must(f.AddECCErrors(1, 3, 2))
	must(f.InjectXID(1, 79))
	must(f.InjectXID(1, 48))
	got, err = b.Health()
	must(err)
	if h := got[1]; *h.ECCUncorrected != 2 || *h.XIDs != 2 || h.LastXID != 48 {
		t.Errorf("after 2 uncorrectable errors and XIDs 79, 48: %s", show(got[1:]))
	}
	if h := got[0]; *h.XIDs != 0 || *h.ECCUncorrected != 0 {
		t.Errorf("GPU 0 without errors: %s", show(got[:1]))
	}
	got, err = b.Health()
	must(err)
	if *got[1].XIDs != 2 {
		t.Errorf("XIDs counted once each: %d after another read", *got[1].XIDs)
	}
}

// TestHealthFailsOpen: a reading NVML refuses is unknown, with the code,
// and the others are read; no event set: XIDs unknown. Health fails only
// where the GPUs cannot be counted.
func TestHealthFailsOpen(t *testing.T) {
	lib := &refusing{Fake: oneH100(t)}
	b := openOn(t, lib)
	got, err := b.Health()
	if err != nil {
		t.Fatal(err)
	}
	h := got[0]
	if h.PowerW != nil || h.TempC != nil || h.UtilPct == nil || h.PowerLimitW == nil || h.ECCUncorrected != nil || h.XIDs != nil {
		t.Errorf("readings %s: want power, temperature, ECC and XIDs unknown, the rest read", show(got))
	}
	for field, code := range map[string]string{"powerW": "NVML_ERROR_NO_PERMISSION", "tempC": "NVML_ERROR_GPU_IS_LOST",
		"eccUncorrected": "NVML_ERROR_NOT_SUPPORTED", "xids": "NVML_ERROR_NOT_SUPPORTED"} {
		if !strings.Contains(h.Unknown[field], code) {
			t.Errorf("%s unknown because %q, want %s", field, h.Unknown[field], code)
		}
	}
	lib.noCount = true
	if _, err := b.Health(); err == nil || !strings.Contains(err.Error(), "count GPUs") {
		t.Errorf("GPUs not counted: %v", err)
	}
}

// refusing is the fake library whose GPUs refuse some health readings
// and which makes no event set.
type refusing struct {
	*fakegpu.Fake
	noCount bool
}

func (r *refusing) DeviceGetCount() (int, nvml.Return) {
	if r.noCount {
		return 0, nvml.ERROR_UNKNOWN
	}
	return r.Fake.DeviceGetCount()
}

func (r *refusing) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	d, ret := r.Fake.DeviceGetHandleByIndex(i)
	return refusingDevice{d}, ret
}

func (r *refusing) EventSetCreate() (nvml.EventSet, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}

type refusingDevice struct{ nvml.Device }

func (refusingDevice) GetPowerUsage() (uint32, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION }
func (refusingDevice) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return 0, nvml.ERROR_GPU_IS_LOST
}
func (refusingDevice) GetTotalEccErrors(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
	return 0, nvml.ERROR_NOT_SUPPORTED // ECC off
}

func show(hs []partitioner.GPUHealth) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "{gpu %d %s", h.GPU, h.UUID)
		for _, f := range []struct {
			name string
			v    any
		}{{"util", h.UtilPct}, {"mem", h.MemUtilPct}, {"power", h.PowerW}, {"limit", h.PowerLimitW}, {"temp", h.TempC},
			{"ecc", h.ECCUncorrected}, {"xids", h.XIDs}} {
			if rv := reflect.ValueOf(f.v); rv.IsNil() {
				fmt.Fprintf(&b, " %s=nil", f.name)
			} else {
				fmt.Fprintf(&b, " %s=%v", f.name, rv.Elem().Interface())
			}
		}
		fmt.Fprintf(&b, " last=%d unknown=%v}\n", h.LastXID, h.Unknown)
	}
	return b.String()
}

// TestXIDWatchRetries: the event set that could not be made at the first
// Health is made at the next, and the XIDs are watched from then on
// (before, one failure left them unknown until mmkd restarted).
func TestXIDWatchRetries(t *testing.T) {
	f := oneH100(t)
	b := openOn(t, &flakySet{Fake: f, fails: 1})
	got, err := b.Health()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].XIDs != nil || !strings.Contains(got[0].Unknown["xids"], "event set") {
		t.Fatalf("first read with the set refused: %s", show(got))
	}
	if _, err := b.Health(); err != nil {
		t.Fatal(err)
	}
	if err := f.InjectXID(0, 79); err != nil {
		t.Fatal(err)
	}
	got, err = b.Health()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].XIDs == nil || *got[0].XIDs != 1 || got[0].LastXID != 79 || got[0].Unknown["xids"] != "" {
		t.Errorf("after the set was made: %s, want one XID 79", show(got))
	}
}

// flakySet refuses its first fails event sets.
type flakySet struct {
	*fakegpu.Fake
	fails int
}

func (f *flakySet) EventSetCreate() (nvml.EventSet, nvml.Return) {
	if f.fails > 0 {
		f.fails--
		return nil, nvml.ERROR_UNKNOWN
	}
	return f.Fake.EventSetCreate()
}

// oneH100 is a fake of one H100 without MIG.
func oneH100(t *testing.T) *fakegpu.Fake {
	t.Helper()
	f, err := fakegpu.New(1, []fakegpu.GPUSpec{{Model: "H100-80GB"}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// openOn is the backend over lib, closed when the test ends.
func openOn(t *testing.T, lib nvml.Interface) *Backend {
	t.Helper()
	b, err := New(lib, "fake")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
