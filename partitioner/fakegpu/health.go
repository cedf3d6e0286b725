package fakegpu

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// The fake's health readings. A GPU's load is the sum of its busy
// processes' SM utilisation (SetProcessUtilization), at most 100 %, on
// the whole GPU or its MIG devices. Power draw goes from the product's
// idle draw to its limit with the load, the temperature from idleTempC
// up by loadTempC; each moves a little with the clock (SetClock), by an
// amount drawn from the seed, the GPU and the second, so that the same
// seed, GPU, load and second read the same on every fake.
const (
	idleTempC    = 30
	loadTempC    = 45
	powerJitterW = 3
	tempJitterC  = 1
)

// SetClock sets the time the health readings are of (default
// time.Now).
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// load is the fraction of the GPU its busy processes use; the caller
// holds the lock.
func (g *gpu) load() (sm, mem uint32) {
	for _, p := range g.processes {
		sm += p.smUtil
		mem += p.memUtil
	}
	return min(sm, 100), min(mem, 100)
}

// jitter is a number in [-1, 1] drawn from the seed, the GPU, what it is
// for and the second of the fake's clock.
func (g *gpu) jitter(what string) float64 {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range []uint64{g.fake.seed, uint64(g.index), uint64(g.fake.now().Unix())} {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	h.Write([]byte(what))
	return float64(h.Sum64()%2001)/1000 - 1
}

// GetUtilizationRates returns the percent of the last sample period a
// kernel ran and memory was read or written; ERROR_NOT_SUPPORTED with
// MIG enabled, where NVML gives no GPU utilisation.
func (d *device) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return nvml.Utilization{}, ret
	}
	if d.gpu.migCurrent {
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
	}
	sm, mem := d.gpu.load()
	return nvml.Utilization{Gpu: sm, Memory: mem}, nvml.SUCCESS
}

// GetPowerUsage returns the board's draw in milliwatts.
func (d *device) GetPowerUsage() (uint32, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	p := d.gpu.product
	sm, _ := d.gpu.load()
	w := float64(p.idleW) + float64(sm)/100*float64(p.limitW-p.idleW) + powerJitterW*d.gpu.jitter("power")
	return uint32(math.Round(min(w, float64(p.limitW)) * 1000)), nvml.SUCCESS
}

// GetEnforcedPowerLimit returns the power limit in milliwatts: the
// product's default.
func (d *device) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return d.gpu.product.limitW * 1000, ret
}

// GetTemperature returns the die's temperature in °C; other sensors are
// not supported.
func (d *device) GetTemperature(sensor nvml.TemperatureSensors) (uint32, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	if sensor != nvml.TEMPERATURE_GPU {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	sm, _ := d.gpu.load()
	c := idleTempC + float64(sm)/100*loadTempC + tempJitterC*d.gpu.jitter("temperature")
	return uint32(math.Round(c)), nvml.SUCCESS
}

// GetTotalEccErrors returns a count of the GPU's memory errors: corrected
// or uncorrected, since the last reset (volatile) or over its life
// (aggregate). ECC is on, as on every data-centre GPU of mmk's models.
func (d *device) GetTotalEccErrors(typ nvml.MemoryErrorType, counter nvml.EccCounterType) (uint64, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	e := d.gpu.ecc
	switch {
	case typ == nvml.MEMORY_ERROR_TYPE_CORRECTED && counter == nvml.VOLATILE_ECC:
		return e.corrected, nvml.SUCCESS
	case typ == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && counter == nvml.VOLATILE_ECC:
		return e.uncorrected, nvml.SUCCESS
	case typ == nvml.MEMORY_ERROR_TYPE_CORRECTED && counter == nvml.AGGREGATE_ECC:
		return e.aggCorrected, nvml.SUCCESS
	case typ == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && counter == nvml.AGGREGATE_ECC:
		return e.aggUncorrected, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// AddECCErrors records memory errors on a GPU, as the hardware would
// count them.
func (f *Fake) AddECCErrors(gpuIndex int, corrected, uncorrected uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpuAt(gpuIndex)
	if err != nil {
		return err
	}
	e := &g.ecc
	e.corrected += corrected
	e.aggCorrected += corrected
	e.uncorrected += uncorrected
	e.aggUncorrected += uncorrected
	return nil
}

// supportedEvents are the event types the fake delivers.
const supportedEvents = nvml.EventTypeXidCriticalError

// GetSupportedEventTypes returns the event types a set may register for.
func (d *device) GetSupportedEventTypes() (uint64, nvml.Return) {
	unlock, ret := d.lock()
	defer unlock()
	return supportedEvents, ret
}

// RegisterEvents adds the GPU's events of the given types to a set made
// by EventSetCreate; ERROR_NOT_SUPPORTED if any type is not supported,
// ERROR_INVALID_ARGUMENT for a set of another library or a freed one.
func (d *device) RegisterEvents(types uint64, set nvml.EventSet) nvml.Return {
	unlock, ret := d.lock()
	defer unlock()
	if ret != nvml.SUCCESS {
		return ret
	}
	s, ok := set.(*eventSet)
	if !ok || s.fake != d.gpu.fake || s.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if types&^supportedEvents != 0 {
		return nvml.ERROR_NOT_SUPPORTED
	}
	s.registered[d.gpu] |= types
	return nvml.SUCCESS
}

// eventSet is an NVML event set: the events of the GPUs registered with
// it, queued until Wait takes them.
type eventSet struct {
	mock.EventSet // unimplemented methods panic, naming themselves
	fake          *Fake
	registered    map[*gpu]uint64
	queue         []nvml.EventData
	freed         bool
	// wake is signalled when an event is queued.
	wake chan struct{}
}

var _ nvml.EventSet = (*eventSet)(nil)

// EventSetCreate makes an empty event set.
func (f *Fake) EventSetCreate() (nvml.EventSet, nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits == 0 {
		return nil, nvml.ERROR_UNINITIALIZED
	}
	s := &eventSet{fake: f, registered: map[*gpu]uint64{}, wake: make(chan struct{}, 1)}
	f.sets = append(f.sets, s)
	return s, nvml.SUCCESS
}

// Wait takes the oldest queued event, waiting for one at most timeoutms
// milliseconds (0: not at all); ERROR_TIMEOUT when none came.
func (s *eventSet) Wait(timeoutms uint32) (nvml.EventData, nvml.Return) {
	deadline := time.NewTimer(time.Duration(timeoutms) * time.Millisecond)
	defer deadline.Stop()
	for {
		s.fake.mu.Lock()
		switch {
		case s.freed:
			s.fake.mu.Unlock()
			return nvml.EventData{}, nvml.ERROR_UNINITIALIZED
		case len(s.queue) > 0:
			ev := s.queue[0]
			s.queue = s.queue[1:]
			s.fake.mu.Unlock()
			return ev, nvml.SUCCESS
		}
		s.fake.mu.Unlock()
		if timeoutms == 0 {
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		select {
		case <-s.wake:
		case <-deadline.C:
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
	}
}

// Free releases the set; it takes no more events.
func (s *eventSet) Free() nvml.Return {
	s.fake.mu.Lock()
	defer s.fake.mu.Unlock()
	if s.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	s.freed = true
	s.queue = nil
	s.fake.sets = slices.DeleteFunc(s.fake.sets, func(x *eventSet) bool { return x == s })
	return nvml.SUCCESS
}

// InjectXID reports an XID critical error on a GPU, as the driver would:
// every set registered for XID events on it gets the event, with the
// GPU's handle, the XID as its data and no particular GPU or compute
// instance.
func (f *Fake) InjectXID(gpuIndex int, xid uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpuAt(gpuIndex)
	if err != nil {
		return err
	}
	for _, s := range f.sets {
		if s.registered[g]&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		s.queue = append(s.queue, nvml.EventData{Device: g.handle, EventType: nvml.EventTypeXidCriticalError, EventData: xid,
			GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32})
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}
