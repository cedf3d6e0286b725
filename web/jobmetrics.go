package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mmkgpu/mmk/node"
)

// UsageNode is a Node that samples its jobs' GPU use (the real node and
// the fake): /metrics, /api/v1/usage and /api/v1/jobs/ID/usage read it.
type UsageNode interface {
	// Usage is the running jobs' GPU use at the last sample.
	Usage() node.UsageView
	// JobUsage is one job's use now and over its last samples; an
	// unknown id wraps jobs.ErrNotFound.
	JobUsage(id string) (node.JobUsageView, error)
}

// The labels of the per-job metrics: where DCGM exporter has one for the
// same thing its name is used (gpu, UUID, GPU_I_PROFILE, GPU_I_ID; the
// last two empty, which PromQL reads as absent, on a GPU without MIG), so
// that the series join DCGM's on them; then the job's id and name.
var jobLabels = []string{"gpu", "UUID", "GPU_I_PROFILE", "GPU_I_ID", "job_id", "job_name"}

// jobCollector is the per-job GPU metrics: what NVML reports of each
// running job's processes, as the node last sampled it.
type jobCollector struct {
	node                                     UsageNode
	fbUsed, fbPeak, fbLimit, smUtil, memUtil *prometheus.Desc
	procs, sampledAt                         *prometheus.Desc
}

var _ prometheus.Collector = (*jobCollector)(nil)

func newJobCollector(n UsageNode) *jobCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &jobCollector{
		node:      n,
		fbUsed:    d("mmk_job_fb_used", "GPU memory the job's processes hold on its device, in MiB (as DCGM_FI_DEV_FB_USED counts a device's).", jobLabels...),
		fbPeak:    d("mmk_job_fb_used_max", "The most GPU memory the job's processes held in this run, in MiB.", jobLabels...),
		fbLimit:   d("mmk_job_fb_limit", "The job's GPU memory limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), in MiB; only jobs that have one.", jobLabels...),
		smUtil:    d("mmk_job_sm_util", "Percent of the last interval the job's kernels ran (NVML process utilisation; not on MIG instances or for MPS clients, where NVML gives none).", jobLabels...),
		memUtil:   d("mmk_job_mem_util", "Percent of the last interval the job's processes read or wrote device memory (NVML process utilisation; not on MIG instances or for MPS clients).", jobLabels...),
		procs:     d("mmk_job_gpu_processes", "The job's processes NVML lists on its device.", jobLabels...),
		sampledAt: d("mmk_job_usage_sampled_timestamp_seconds", "When the jobs' GPU use was last read (Unix time)."),
	}
}

// Describe sends every metric's description.
func (jc *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{jc.fbUsed, jc.fbPeak, jc.fbLimit, jc.smUtil, jc.memUtil, jc.procs, jc.sampledAt} {
		ch <- d
	}
}

// Collect reads the node's last sample.
func (jc *jobCollector) Collect(ch chan<- prometheus.Metric) {
	v := jc.node.Usage()
	if v.At.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(jc.sampledAt, prometheus.GaugeValue, float64(v.At.UnixNano())/1e9)
	for _, u := range v.Jobs {
		gi := ""
		if u.GPUInstance >= 0 {
			gi = strconv.Itoa(u.GPUInstance)
		}
		labels := []string{strconv.Itoa(u.GPU), u.GPUUUID, u.Profile, gi, u.ID, u.Name}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		gauge(jc.fbUsed, float64(u.UsedMemoryMiB))
		gauge(jc.fbPeak, float64(u.PeakMemoryMiB))
		gauge(jc.procs, float64(u.Processes))
		if u.LimitMiB > 0 {
			gauge(jc.fbLimit, float64(u.LimitMiB))
		}
		if u.Util {
			gauge(jc.smUtil, float64(u.SMUtil))
			gauge(jc.memUtil, float64(u.MemUtil))
		}
	}
}

// usageNode is the server's node as a UsageNode, or an error when it
// samples no GPU use.
func (s *Server) usageNode() (UsageNode, error) {
	if u, ok := s.node.(UsageNode); ok {
		return u, nil
	}
	return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "jobs' GPU use is not served"}
}

// usage serves GET /api/v1/usage: every running job's GPU use.
func (s *Server) usage(*gin.Context) (any, error) {
	u, err := s.usageNode()
	if err != nil {
		return nil, err
	}
	return u.Usage(), nil
}

// jobUsage serves GET /api/v1/jobs/:id/usage: a job's GPU use and its
// history.
func (s *Server) jobUsage(c *gin.Context) (any, error) {
	u, err := s.usageNode()
	if err != nil {
		return nil, err
	}
	v, err := u.JobUsage(c.Param("id"))
	if err != nil {
		return nil, nodeError("job usage", err)
	}
	return v, nil
}
