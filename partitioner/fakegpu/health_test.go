package fakegpu

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// health is what the health queries of one GPU answer.
type health struct {
	util             nvml.Utilization
	utilRet          nvml.Return
	powerMW, limitMW uint32
	tempC            uint32
}

func readHealth(t *testing.T, d nvml.Device) health {
	t.Helper()
	var h health
	h.util, h.utilRet = d.GetUtilizationRates()
	var ret nvml.Return
	if h.powerMW, ret = d.GetPowerUsage(); ret != nvml.SUCCESS {
		t.Fatalf("power: %v", ret)
	}
	if h.limitMW, ret = d.GetEnforcedPowerLimit(); ret != nvml.SUCCESS {
		t.Fatalf("power limit: %v", ret)
	}
	if h.tempC, ret = d.GetTemperature(nvml.TEMPERATURE_GPU); ret != nvml.SUCCESS {
		t.Fatalf("temperature: %v", ret)
	}
	return h
}

// TestHealthReadings: utilisation is the busy processes' (NVML gives
// none with MIG on); power and temperature rise with the load, stay
// within the product's idle draw and limit, move with the injected clock
// and are the same for the same seed, GPU, load and time.
func TestHealthReadings(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		spec        GPUSpec
		mig         string // a MIG device to run the process on
		sm, mem     uint32
		utilRet     nvml.Return
		util, memU  uint32
		idleW, maxW uint32
	}{
		{"H200 idle", GPUSpec{Model: "H200-141GB"}, "", 0, 0, nvml.SUCCESS, 0, 0, 75, 700},
		{"H200 busy", GPUSpec{Model: "H200-141GB"}, "", 80, 30, nvml.SUCCESS, 80, 30, 75, 700},
		{"H100 with MIG, busy", GPUSpec{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"}, "mig", 60, 20, nvml.ERROR_NOT_SUPPORTED, 0, 0, 70, 700},
		{"A100 idle", GPUSpec{Model: "A100-80GB"}, "", 0, 0, nvml.SUCCESS, 0, 0, 60, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := newFake(t, tt.spec)
			now := at
			f.SetClock(func() time.Time { return now })
			mig := ""
			if tt.mig != "" {
				md, ret := d.GetMigDeviceHandleByIndex(0)
				if ret != nvml.SUCCESS {
					t.Fatal(ret)
				}
				mig, _ = md.GetUUID()
			}
			if err := f.AttachProcess(0, mig, 100, 1024); err != nil {
				t.Fatal(err)
			}
			if err := f.SetProcessUtilization(100, tt.sm, tt.mem); err != nil {
				t.Fatal(err)
			}
			h := readHealth(t, d)
			if h.utilRet != tt.utilRet || h.util.Gpu != tt.util || h.util.Memory != tt.memU {
				t.Errorf("utilisation %+v %v, want %d %% and %d %% (%v)", h.util, h.utilRet, tt.util, tt.memU, tt.utilRet)
			}
			if h.limitMW != tt.maxW*1000 {
				t.Errorf("power limit %d mW, want %d W", h.limitMW, tt.maxW)
			}
			load := float64(tt.sm) / 100
			wantW := float64(tt.idleW) + load*float64(tt.maxW-tt.idleW)
			if w := float64(h.powerMW) / 1000; w < wantW-powerJitterW || w > wantW+powerJitterW {
				t.Errorf("power %.1f W, want %.0f ± %d W", w, wantW, powerJitterW)
			}
			wantC := idleTempC + load*float64(loadTempC)
			if c := float64(h.tempC); c < wantC-tempJitterC || c > wantC+tempJitterC {
				t.Errorf("temperature %.0f °C, want %.0f ± %d", c, wantC, tempJitterC)
			}
			// The same instant on a fake of the same seed: the same
			// readings.
			g, e := newFake(t, tt.spec)
			g.SetClock(func() time.Time { return at })
			if err := g.AttachProcess(0, mig, 100, 1024); err != nil {
				t.Fatal(err)
			}
			if err := g.SetProcessUtilization(100, tt.sm, tt.mem); err != nil {
				t.Fatal(err)
			}
			if again := readHealth(t, e); again != h {
				t.Errorf("another fake of the same seed at the same time: %+v, want %+v", again, h)
			}
			// Over a minute of the clock the readings move.
			powers, temps := map[uint32]bool{}, map[uint32]bool{}
			for i := range 60 {
				now = at.Add(time.Duration(i) * time.Second)
				x := readHealth(t, d)
				powers[x.powerMW], temps[x.tempC] = true, true
			}
			if len(powers) < 10 || len(temps) < 2 {
				t.Errorf("over a minute: %d power readings, %d temperatures; want them to move", len(powers), len(temps))
			}
		})
	}
}

// TestECCCounters: uncorrectable errors added to a GPU are counted in
// its volatile and aggregate counters; a reset clears the volatile one
// only, as a driver reload does.
func TestECCCounters(t *testing.T) {
	f, d := newFake(t, GPUSpec{Model: "H100-80GB"})
	count := func(typ nvml.MemoryErrorType, counter nvml.EccCounterType) uint64 {
		t.Helper()
		n, ret := d.GetTotalEccErrors(typ, counter)
		if ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
		return n
	}
	if n := count(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); n != 0 {
		t.Errorf("a new GPU has %d errors", n)
	}
	if err := f.AddECCErrors(0, 5, 2); err != nil {
		t.Fatal(err)
	}
	if err := f.AddECCErrors(3, 0, 1); err == nil {
		t.Error("errors added to GPU 3 of 1")
	}
	tests := []struct {
		typ     nvml.MemoryErrorType
		counter nvml.EccCounterType
		want    uint64
	}{
		{nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC, 2},
		{nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC, 2},
		{nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC, 5},
	}
	for _, tt := range tests {
		if n := count(tt.typ, tt.counter); n != tt.want {
			t.Errorf("errors of type %d, counter %d: %d, want %d", tt.typ, tt.counter, n, tt.want)
		}
	}
	if err := f.ResetGPU(0); err != nil {
		t.Fatal(err)
	}
	if v, a := count(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC), count(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); v != 0 || a != 2 {
		t.Errorf("after a reset: volatile %d, aggregate %d; want 0 and 2", v, a)
	}
}

// TestXIDEvents: an XID injected on a GPU reaches every event set that
// registered XID events on it, once each, with the GPU's handle and the
// code; nothing else reaches them; a set waits at most its timeout.
func TestXIDEvents(t *testing.T) {
	f, d0 := newFake(t, GPUSpec{Model: "H100-80GB"}, GPUSpec{Model: "H200-141GB"})
	types, ret := d0.GetSupportedEventTypes()
	if ret != nvml.SUCCESS || types&nvml.EventTypeXidCriticalError == 0 {
		t.Fatalf("supported events %#x %v, want XID critical errors among them", types, ret)
	}
	set, ret := f.EventSetCreate()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if ret := d0.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if ret := d0.RegisterEvents(nvml.EventTypeClock, set); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("register clock events: %v, want NOT_SUPPORTED", ret)
	}
	if _, ret := set.Wait(0); ret != nvml.ERROR_TIMEOUT {
		t.Errorf("wait with no event: %v, want TIMEOUT", ret)
	}
	if err := f.InjectXID(0, 79); err != nil {
		t.Fatal(err)
	}
	if err := f.InjectXID(1, 48); err != nil { // GPU 1 is not registered
		t.Fatal(err)
	}
	if err := f.InjectXID(2, 48); err == nil {
		t.Error("an XID on GPU 2 of 2")
	}
	ev, ret := set.Wait(0)
	if ret != nvml.SUCCESS || ev.Device != d0 || ev.EventType != nvml.EventTypeXidCriticalError || ev.EventData != 79 {
		t.Errorf("event %+v %v, want XID 79 on GPU 0", ev, ret)
	}
	if _, ret := set.Wait(0); ret != nvml.ERROR_TIMEOUT {
		t.Errorf("a second event: %v, want TIMEOUT (GPU 1 is not registered)", ret)
	}
	// A waiting set is woken by the event.
	go func() { _ = f.InjectXID(0, 31) }()
	if ev, ret := set.Wait(60_000); ret != nvml.SUCCESS || ev.EventData != 31 {
		t.Errorf("a waiting set got %+v %v, want XID 31", ev, ret)
	}
	if ret := set.Free(); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := set.Wait(0); ret != nvml.ERROR_UNINITIALIZED {
		t.Errorf("wait on a freed set: %v, want UNINITIALIZED", ret)
	}
}
