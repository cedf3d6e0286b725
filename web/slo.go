package web

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mmkgpu/mmk/node"
)

// SLONode is a Node whose kernel schedulers measure the online jobs'
// requests against their latency targets (the real node and the fake):
// /api/v1/slo, /api/v1/jobs/ID/slo and /metrics read it.
type SLONode interface {
	// SLO is every online job's standing and each instance's rung.
	SLO() node.SLOView
	// JobSLO is one job's standing, its history and its instance's
	// decisions; an unknown id wraps jobs.ErrNotFound.
	JobSLO(id string) (node.JobSLOView, error)
}

// sloNode is the server's node as an SLONode, or an error when it
// measures no latency.
func (s *Server) sloNode() (SLONode, error) {
	if n, ok := s.node.(SLONode); ok {
		return n, nil
	}
	return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "latency targets are not served"}
}

// slo serves GET /api/v1/slo.
func (s *Server) slo(*gin.Context) (any, error) {
	n, err := s.sloNode()
	if err != nil {
		return nil, err
	}
	return n.SLO(), nil
}

// jobSLO serves GET /api/v1/jobs/:id/slo.
func (s *Server) jobSLO(c *gin.Context) (any, error) {
	n, err := s.sloNode()
	if err != nil {
		return nil, err
	}
	v, err := n.JobSLO(c.Param("id"))
	if err != nil {
		return nil, nodeError("job latency", err)
	}
	return v, nil
}

// sloLabels are the per-job latency metrics' labels: the GPU use
// metrics' (DCGM exporter's device labels, the job) and its target.
var sloLabels = append(slices.Clone(jobLabels), "target")

// sloCollector is the online jobs' latency against their targets.
type sloCollector struct {
	node                               SLONode
	requests, late, p50, pct, bound    *prometheus.Desc
	attainment, recentAttainment, rung *prometheus.Desc
}

var _ prometheus.Collector = (*sloCollector)(nil)

func newSLOCollector(n SLONode) *sloCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &sloCollector{
		node:             n,
		requests:         d("mmk_job_requests_total", "Requests of the online job measured since its process connected (by its hook, or as the job reported them).", sloLabels...),
		late:             d("mmk_job_requests_late_total", "Those of them over the job's latency bound.", sloLabels...),
		attainment:       d("mmk_job_slo_attainment", "Fraction of the job's requests within its bound since it connected.", sloLabels...),
		recentAttainment: d("mmk_job_slo_recent_attainment", "Fraction within its bound over the latency controller's window.", sloLabels...),
		p50:              d("mmk_job_latency_p50_seconds", "Median request latency over the controller's window.", sloLabels...),
		pct:              d("mmk_job_latency_target_percentile_seconds", "Request latency at the target's percentile (p99 for p99=...) over the controller's window.", sloLabels...),
		bound:            d("mmk_job_latency_bound_seconds", "The latency bound in force (a ratio target once the job's latency alone is measured).", sloLabels...),
		rung:             d("mmk_instance_slo_rung", "The latency controller's rung on the instance (instance: gpu0/gi1, as mmk_instance_jobs): 0 is MPS client priority alone, higher rungs restrain the offline jobs more.", "instance", "rung"),
	}
}

// Describe sends every metric's description.
func (sc *sloCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sc.requests, sc.late, sc.attainment, sc.recentAttainment, sc.p50, sc.pct, sc.bound, sc.rung} {
		ch <- d
	}
}

// Collect reads the node's view.
func (sc *sloCollector) Collect(ch chan<- prometheus.Metric) {
	v := sc.node.SLO()
	for _, j := range v.Jobs {
		if !j.Live {
			continue
		}
		gi := ""
		if j.GPUInstance >= 0 {
			gi = strconv.Itoa(j.GPUInstance)
		}
		labels := []string{strconv.Itoa(j.GPU), j.GPUUUID, j.Profile, gi, j.ID, j.Name, j.Target}
		ch <- prometheus.MustNewConstMetric(sc.requests, prometheus.CounterValue, float64(j.Requests), labels...)
		ch <- prometheus.MustNewConstMetric(sc.late, prometheus.CounterValue, float64(j.Late), labels...)
		ch <- prometheus.MustNewConstMetric(sc.attainment, prometheus.GaugeValue, j.Attainment, labels...)
		if j.RecentN > 0 {
			ch <- prometheus.MustNewConstMetric(sc.recentAttainment, prometheus.GaugeValue, 1-float64(j.RecentLate)/float64(j.RecentN), labels...)
			ch <- prometheus.MustNewConstMetric(sc.p50, prometheus.GaugeValue, j.P50Ms/1e3, labels...)
			ch <- prometheus.MustNewConstMetric(sc.pct, prometheus.GaugeValue, j.PctMs/1e3, labels...)
		}
		if j.BoundMs > 0 {
			ch <- prometheus.MustNewConstMetric(sc.bound, prometheus.GaugeValue, j.BoundMs/1e3, labels...)
		}
	}
	for _, is := range v.Instances {
		ch <- prometheus.MustNewConstMetric(sc.rung, prometheus.GaugeValue, float64(is.Level), is.Instance, is.Rung)
	}
}
