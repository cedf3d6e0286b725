package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mmkgpu/mmk/node"
)

// HealthNode is a Node that samples its GPUs' health (the real node and
// the fake): /api/v1/gpus/health and /metrics read it.
type HealthNode interface {
	// Health is the GPUs' health at the last sample, with each GPU's
	// samples after since (all of them for the zero time).
	Health(since time.Time) node.HealthView
}

// gpuHealth serves GET /api/v1/gpus/health?since=TIME: each GPU's last
// readings and its history (after since, RFC 3339, where given: the
// dashboard asks for what it lacks).
func (s *Server) gpuHealth(c *gin.Context) (any, error) {
	q, err := query(c, "since")
	if err != nil {
		return nil, err
	}
	var since time.Time
	if q.Has("since") {
		if since, err = time.Parse(time.RFC3339Nano, q.Get("since")); err != nil {
			return nil, badRequest("since", "since must be a time as RFC 3339 writes it (2026-11-25T10:00:00Z), not %q", truncate(q.Get("since"), 80))
		}
	}
	h, ok := s.node.(HealthNode)
	if !ok {
		return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "GPU health is not served"}
	}
	return h.Health(since), nil
}

// gpuLabels are the per-GPU metrics' labels, as DCGM exporter names
// them, so that the series join DCGM's.
var gpuLabels = []string{"gpu", "UUID"}

// healthCollector is the per-GPU health metrics: NVML's readings at the
// node's last sample, named after the DCGM fields they match.
type healthCollector struct {
	node                                   HealthNode
	util, memUtil, power, limit, temp, ecc *prometheus.Desc
	xids, lastXID, sampledAt               *prometheus.Desc
}

var _ prometheus.Collector = (*healthCollector)(nil)

func newHealthCollector(n HealthNode) *healthCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &healthCollector{
		node:      n,
		util:      d("mmk_gpu_util", "Percent of the last sample period a kernel ran on the GPU (DCGM_FI_DEV_GPU_UTIL); not with MIG, where NVML gives none.", gpuLabels...),
		memUtil:   d("mmk_gpu_mem_copy_util", "Percent of the last sample period the GPU's memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL); not with MIG.", gpuLabels...),
		power:     d("mmk_gpu_power_usage", "The board's power draw in watts (DCGM_FI_DEV_POWER_USAGE).", gpuLabels...),
		limit:     d("mmk_gpu_power_limit", "The power limit the driver enforces, in watts (DCGM_FI_DEV_ENFORCED_POWER_LIMIT).", gpuLabels...),
		temp:      d("mmk_gpu_temp", "The GPU die's temperature in degrees Celsius (DCGM_FI_DEV_GPU_TEMP).", gpuLabels...),
		ecc:       d("mmk_gpu_ecc_dbe_volatile_total", "Uncorrectable (double-bit) ECC errors since the driver loaded (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL).", gpuLabels...),
		xids:      d("mmk_gpu_xid_errors_total", "XID critical errors the driver reported for the GPU since mmkd started.", gpuLabels...),
		lastXID:   d("mmk_gpu_last_xid", "The code of the GPU's latest XID critical error (DCGM_FI_DEV_XID_ERRORS); only GPUs that had one.", gpuLabels...),
		sampledAt: d("mmk_gpu_health_sampled_timestamp_seconds", "When the GPUs' health was last read (Unix time)."),
	}
}

// Describe sends every metric's description.
func (hc *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hc.util, hc.memUtil, hc.power, hc.limit, hc.temp, hc.ecc, hc.xids, hc.lastXID, hc.sampledAt} {
		ch <- d
	}
}

// noHistory is a since later than any sample: the last readings alone.
var noHistory = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Collect reads the node's last sample.
func (hc *healthCollector) Collect(ch chan<- prometheus.Metric) {
	v := hc.node.Health(noHistory)
	if v.At.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(hc.sampledAt, prometheus.GaugeValue, float64(v.At.UnixNano())/1e9)
	for _, g := range v.GPUs {
		labels := []string{strconv.Itoa(g.GPU), g.UUID}
		put := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
		}
		if g.UtilPct != nil {
			put(hc.util, prometheus.GaugeValue, float64(*g.UtilPct))
		}
		if g.MemUtilPct != nil {
			put(hc.memUtil, prometheus.GaugeValue, float64(*g.MemUtilPct))
		}
		if g.PowerW != nil {
			put(hc.power, prometheus.GaugeValue, *g.PowerW)
		}
		if g.PowerLimitW != nil {
			put(hc.limit, prometheus.GaugeValue, *g.PowerLimitW)
		}
		if g.TempC != nil {
			put(hc.temp, prometheus.GaugeValue, float64(*g.TempC))
		}
		if g.ECCUncorrected != nil {
			put(hc.ecc, prometheus.CounterValue, float64(*g.ECCUncorrected))
		}
		if g.XIDs != nil {
			put(hc.xids, prometheus.CounterValue, float64(*g.XIDs))
		}
		if g.LastXID != 0 {
			put(hc.lastXID, prometheus.GaugeValue, float64(g.LastXID))
		}
	}
}
