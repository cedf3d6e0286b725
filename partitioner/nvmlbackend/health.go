package nvmlbackend

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

var _ partitioner.HealthReader = (*Backend)(nil)

// xidWatch is what the backend keeps of XID events: one event set,
// registered for XID critical errors on every GPU that supports them,
// and the errors it has delivered since, by GPU UUID. What failed (the
// set, a GPU's handle or registration) is tried again at the next
// Health; a GPU that reports no XID events is not.
type xidWatch struct {
	set nvml.EventSet
	// done marks, by GPU index, a GPU registered or that cannot report
	// XID events.
	done map[int]bool
	// why says, by GPU index, why its XIDs are not watched (the set could
	// not be made, or the GPU cannot report them).
	why   map[int]string
	count map[string]uint64
	last  map[string]uint64
}

// maxEventsPerRead bounds the events one Health takes from the set: a
// storm of them must not hold the backend.
const maxEventsPerRead = 10000

// Health reads each GPU's utilisation (nvmlDeviceGetUtilizationRates,
// which NVML does not give with MIG enabled), power draw and enforced
// limit, temperature, volatile uncorrectable ECC count and the XID
// critical errors delivered since its first call (nvmlEventSetWait, no
// waiting). Every query only reads. A reading NVML refuses is left
// unknown with the code, never an error; only a failure to count the
// GPUs is.
func (b *Backend) Health() ([]partitioner.GPUHealth, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ret := b.lib.DeviceGetCount()
	if err := check(ret, "count GPUs"); err != nil {
		return nil, err
	}
	b.watchXIDs(n)
	b.takeXIDs()
	out := make([]partitioner.GPUHealth, 0, n)
	for i := range n {
		h := partitioner.GPUHealth{GPU: i}
		unknown := func(field string, ret nvml.Return) {
			if h.Unknown == nil {
				h.Unknown = map[string]string{}
			}
			h.Unknown[field] = CodeName(ret)
		}
		d, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			for _, f := range []string{"utilPct", "memUtilPct", "powerW", "powerLimitW", "tempC", "eccUncorrected", "xids"} {
				unknown(f, ret)
			}
			out = append(out, h)
			continue
		}
		h.UUID, _ = d.GetUUID()
		if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
			h.UtilPct, h.MemUtilPct = ptr(int(u.Gpu)), ptr(int(u.Memory))
		} else {
			unknown("utilPct", ret)
			unknown("memUtilPct", ret)
		}
		if mw, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
			h.PowerW = ptr(float64(mw) / 1000)
		} else {
			unknown("powerW", ret)
		}
		if mw, ret := d.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
			h.PowerLimitW = ptr(float64(mw) / 1000)
		} else {
			unknown("powerLimitW", ret)
		}
		if c, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
			h.TempC = ptr(int(c))
		} else {
			unknown("tempC", ret)
		}
		if e, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS {
			h.ECCUncorrected = ptr(e)
		} else {
			unknown("eccUncorrected", ret)
		}
		if why, off := b.xids.why[i]; off {
			if h.Unknown == nil {
				h.Unknown = map[string]string{}
			}
			h.Unknown["xids"] = why
		} else {
			h.XIDs, h.LastXID = ptr(b.xids.count[h.UUID]), b.xids.last[h.UUID]
		}
		out = append(out, h)
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// watchXIDs makes the event set and registers each of the n GPUs for
// XID critical errors, trying again what failed before; what cannot be
// watched is noted in why.
func (b *Backend) watchXIDs(n int) {
	w := &b.xids
	if w.done == nil {
		w.done, w.why, w.count, w.last = map[int]bool{}, map[int]string{}, map[string]uint64{}, map[string]uint64{}
	}
	if w.set == nil {
		set, ret := b.lib.EventSetCreate()
		if ret != nvml.SUCCESS {
			for i := range n {
				w.why[i] = "event set: " + CodeName(ret)
			}
			return
		}
		w.set = set
		clear(w.why)
	}
	for i := range n {
		if w.done[i] {
			continue
		}
		d, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			w.why[i] = CodeName(ret)
			continue
		}
		types, ret := d.GetSupportedEventTypes()
		switch {
		case ret != nvml.SUCCESS:
			w.why[i] = "supported events: " + CodeName(ret)
			continue
		case types&nvml.EventTypeXidCriticalError == 0:
			w.why[i], w.done[i] = "the GPU reports no XID events", true
			continue
		}
		if ret := d.RegisterEvents(nvml.EventTypeXidCriticalError, w.set); ret != nvml.SUCCESS {
			w.why[i] = "register XID events: " + CodeName(ret)
			continue
		}
		delete(w.why, i)
		w.done[i] = true
	}
}

// takeXIDs counts the XID events waiting in the set, without waiting.
func (b *Backend) takeXIDs() {
	w := &b.xids
	if w.set == nil {
		return
	}
	for range maxEventsPerRead {
		ev, ret := w.set.Wait(0)
		if ret != nvml.SUCCESS {
			return // NVML_ERROR_TIMEOUT: none left
		}
		if ev.EventType&nvml.EventTypeXidCriticalError == 0 || ev.Device == nil {
			continue
		}
		uuid, ret := ev.Device.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		w.count[uuid]++
		w.last[uuid] = ev.EventData
	}
}

// closeXIDs frees the event set.
func (b *Backend) closeXIDs() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.xids.set != nil {
		b.xids.set.Free()
		b.xids.set = nil
	}
}
