package profiling

import (
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/predictor"
)

// NVMLMeter measures one GPU through NVML: GPM metrics (SM utilisation,
// SM occupancy, DRAM bandwidth utilisation; Hopper and later) from two
// samples at Start and Stop, and the coarse utilisation rates polled in
// between. Without GPM the first three stay zero (Warning says so).
type NVMLMeter struct {
	lib     nvml.Interface
	dev     nvml.Device
	gpm     bool
	s1, s2  nvml.GpmSample
	Warning string

	mu       sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	gpu, mem float64
	polls    int
}

// NewNVMLMeter opens NVML and GPU index.
func NewNVMLMeter(lib nvml.Interface, index int) (*NVMLMeter, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %s", lib.ErrorString(ret))
	}
	dev, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml GPU %d: %s", index, lib.ErrorString(ret))
	}
	m := &NVMLMeter{lib: lib, dev: dev}
	support, ret := dev.GpmQueryDeviceSupport()
	if ret == nvml.SUCCESS && support.IsSupportedDevice != 0 {
		s1, r1 := lib.GpmSampleAlloc()
		s2, r2 := lib.GpmSampleAlloc()
		if r1 == nvml.SUCCESS && r2 == nvml.SUCCESS {
			m.gpm, m.s1, m.s2 = true, s1, s2
		}
	}
	if !m.gpm {
		m.Warning = "GPM metrics are not supported here: SM, occupancy and DRAM features are zero"
	}
	return m, nil
}

// Start takes the first GPM sample and starts polling utilisation rates.
func (m *NVMLMeter) Start() error {
	if m.gpm {
		if ret := m.lib.GpmSampleGet(m.dev, m.s1); ret != nvml.SUCCESS {
			return fmt.Errorf("nvml GPM sample: %s", m.lib.ErrorString(ret))
		}
	}
	m.gpu, m.mem, m.polls = 0, 0, 0
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.poll()
	return nil
}

func (m *NVMLMeter) poll() {
	defer close(m.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			u, ret := m.dev.GetUtilizationRates()
			if ret == nvml.SUCCESS {
				m.mu.Lock()
				m.gpu += float64(u.Gpu)
				m.mem += float64(u.Memory)
				m.polls++
				m.mu.Unlock()
			}
		}
	}
}

// Stop takes the second GPM sample and returns the averages.
func (m *NVMLMeter) Stop() (predictor.Util, error) {
	close(m.stop)
	<-m.done
	var u predictor.Util
	m.mu.Lock()
	if m.polls > 0 {
		u.GPU, u.Mem = m.gpu/float64(m.polls), m.mem/float64(m.polls)
	}
	m.mu.Unlock()
	if !m.gpm {
		return u, nil
	}
	if ret := m.lib.GpmSampleGet(m.dev, m.s2); ret != nvml.SUCCESS {
		return u, fmt.Errorf("nvml GPM sample: %s", m.lib.ErrorString(ret))
	}
	get := &nvml.GpmMetricsGetType{NumMetrics: 3, Sample1: m.s1, Sample2: m.s2}
	get.Metrics[0].MetricId = uint32(nvml.GPM_METRIC_SM_UTIL)
	get.Metrics[1].MetricId = uint32(nvml.GPM_METRIC_SM_OCCUPANCY)
	get.Metrics[2].MetricId = uint32(nvml.GPM_METRIC_DRAM_BW_UTIL)
	if ret := m.lib.GpmMetricsGet(get); ret != nvml.SUCCESS {
		return u, fmt.Errorf("nvml GPM metrics: %s", m.lib.ErrorString(ret))
	}
	vals := make([]float64, 3)
	for i := range vals {
		if r := nvml.Return(get.Metrics[i].NvmlReturn); r != nvml.SUCCESS {
			return u, fmt.Errorf("nvml GPM metric %d: %s", get.Metrics[i].MetricId, m.lib.ErrorString(r))
		}
		vals[i] = get.Metrics[i].Value
	}
	u.SM, u.Occupancy, u.DRAM = vals[0], vals[1], vals[2]
	return u, nil
}

// Close frees the GPM samples and shuts NVML down.
func (m *NVMLMeter) Close() {
	if m.gpm {
		m.lib.GpmSampleFree(m.s1)
		m.lib.GpmSampleFree(m.s2)
	}
	m.lib.Shutdown()
}

// DriverVersion is the NVIDIA driver's version, or "" if NVML does not say.
func (m *NVMLMeter) DriverVersion() string {
	v, ret := m.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return ""
	}
	return v
}
