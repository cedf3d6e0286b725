package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// nodeCollector is a Prometheus collector that reads the Node when
// scraped, so that the metrics never disagree with the API and the node
// keeps no metric state of its own.
type nodeCollector struct {
	node Node

	jobs, waiting, decisions, throughput, instances, instJobs  *prometheus.Desc
	decideSeconds                                              *prometheus.Desc
	waitingBy                                                  *prometheus.Desc
	kernels, atOnce, held, filled, failOpens, went, unprofiled *prometheus.Desc
	refused, waits, tasks, observed, unobserved, quiet, late   *prometheus.Desc
	badReports, uncorroborated, reportsLimited                 *prometheus.Desc
	restrained                                                 *prometheus.Desc
}

var _ prometheus.Collector = (*nodeCollector)(nil)

func newNodeCollector(n Node) *nodeCollector {
	sched := []string{"instance", "policy"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &nodeCollector{
		node:           n,
		jobs:           d("mmk_jobs", "Jobs the node holds, by state and type.", "state", "type"),
		waiting:        d("mmk_jobs_waiting", "Pending jobs that found no place in the plan."),
		waitingBy:      d("mmk_jobs_waiting_by_reason", "Waiting jobs by the class of what holds them (memory, memory-limit, share, mig, slo, no-instance, start, other).", "reason"),
		decisions:      d("mmk_placement_decisions_total", "Runs of the placement loop since mmkd started."),
		decideSeconds:  d("mmk_placement_decide_seconds_total", "Time Algorithm 1 took over every run of the placement loop (divided by mmk_placement_decisions_total: the mean per decision)."),
		throughput:     d("mmk_predicted_throughput", "Predicted system throughput: the sum of the placed jobs' speeds."),
		instances:      d("mmk_instances", "GPU instances of the plan, by GPU and whether an MPS daemon serves them.", "gpu", "mps"),
		instJobs:       d("mmk_instance_jobs", "Jobs placed in a GPU instance (instance: gpu0/gi1, NVML's GPU-instance id, or gpu2 for a GPU without MIG; profile: its MIG profile, empty without MIG).", "gpu", "instance", "profile"),
		kernels:        d("mmk_kernelsched_kernels_total", "Kernel launches the instance's kernel scheduler saw.", sched...),
		atOnce:         d("mmk_kernelsched_at_once_total", "Kernel launches let go at once, without waiting.", sched...),
		held:           d("mmk_kernelsched_held_total", "Kernel launches held for a higher-priority task.", sched...),
		filled:         d("mmk_kernelsched_filled_total", "Held kernel launches let go into a higher-priority task's idle gap.", sched...),
		failOpens:      d("mmk_kernelsched_fail_opens_total", "Held launches the hook let go when the scheduler did not answer in time.", sched...),
		went:           d("mmk_kernelsched_went_total", "Launches of held tasks the hook let go without a decision.", sched...),
		unprofiled:     d("mmk_kernelsched_unprofiled_total", "Launches whose kernel the task's profile lacks.", sched...),
		refused:        d("mmk_kernelsched_refused_total", "Hook connections the scheduler refused.", sched...),
		waits:          d("mmk_kernelsched_waits_total", "Times the scheduler's loop blocked waiting for work.", sched...),
		tasks:          d("mmk_kernelsched_tasks", "Tasks connected to the instance's kernel scheduler.", sched...),
		observed:       d("mmk_kernelsched_observed_total", "Kernels of held tasks counted finished when the GPU said so (events the hook recorded).", sched...),
		unobserved:     d("mmk_kernelsched_unobserved_total", "Kernels of observed tasks counted finished past their prediction's grace without the GPU's word.", sched...),
		quiet:          d("mmk_kernelsched_quiet_tasks", "Tasks whose launches the policy needs not now: their hooks report none.", sched...),
		late:           d("mmk_kernelsched_loud_late_total", "Quiet tasks turned loud whose hooks did not turn their launch callbacks on within the grace.", sched...),
		badReports:     d("mmk_kernelsched_bad_reports_total", "Requests a service reported that were dropped as implausible (ending before they start, starting before the task connected, or longer than any bound).", sched...),
		uncorroborated: d("mmk_kernelsched_uncorroborated_reports_total", "Requests a service reported that were not measured because its hook saw no GPU work of it in them.", sched...),
		restrained:     d("mmk_job_restrained", "1 for each running offline job its instance's latency controller restrains now, by how (suspended, released: running for its progress floor, masked, held) and the online jobs it is for.", "job", "state", "for"),
		reportsLimited: d("mmk_kernelsched_reports_limited_total", "Requests a service reported past its task's rate (5,000 a second), dropped.", sched...),
	}
}

// Describe sends every metric's description.
func (nc *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nc.jobs, nc.waiting, nc.waitingBy, nc.decisions, nc.decideSeconds, nc.throughput, nc.instances, nc.instJobs,
		nc.kernels, nc.atOnce, nc.held, nc.filled, nc.failOpens, nc.went, nc.unprofiled, nc.refused, nc.waits, nc.tasks,
		nc.observed, nc.unobserved, nc.quiet, nc.late, nc.badReports, nc.uncorroborated, nc.reportsLimited, nc.restrained} {
		ch <- d
	}
}

// Collect reads the node's jobs, plan and kernel schedulers.
func (nc *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	nc.collectJobs(ch)
	nc.collectPlan(ch, nc.node.Plan())
	for _, sv := range nc.node.Schedulers() {
		nc.collectSched(ch, sv)
	}
}

// collectJobs counts the jobs of every state and type, zeros included, so
// that each series exists from the first scrape.
func (nc *nodeCollector) collectJobs(ch chan<- prometheus.Metric) {
	list, err := nc.node.Jobs(node.JobFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(nc.jobs, fmt.Errorf("list jobs: %w", err))
		return
	}
	type key struct {
		state jobs.State
		kind  jobs.Kind
	}
	counts := map[key]int{}
	for _, j := range list {
		counts[key{j.State, j.Spec.Kind}]++
		if r := j.Restraint; r != nil {
			ch <- prometheus.MustNewConstMetric(nc.restrained, prometheus.GaugeValue, 1, j.ID, r.State, strings.Join(r.For, ","))
		}
	}
	for _, st := range jobs.States() {
		for _, k := range []jobs.Kind{jobs.Online, jobs.Offline} {
			ch <- prometheus.MustNewConstMetric(nc.jobs, prometheus.GaugeValue, float64(counts[key{st, k}]), string(st), string(k))
		}
	}
}

func (nc *nodeCollector) collectPlan(ch chan<- prometheus.Metric, p node.PlanView) {
	// Waiting lists the first node.MaxWaitingShown; WaitingTotal counts all.
	ch <- prometheus.MustNewConstMetric(nc.waiting, prometheus.GaugeValue, float64(p.WaitingTotal))
	for _, class := range node.WaitClasses {
		ch <- prometheus.MustNewConstMetric(nc.waitingBy, prometheus.GaugeValue, float64(p.WaitingByClass[class]), class)
	}
	ch <- prometheus.MustNewConstMetric(nc.decisions, prometheus.CounterValue, float64(p.Decisions))
	ch <- prometheus.MustNewConstMetric(nc.decideSeconds, prometheus.CounterValue, p.DecideSeconds)
	ch <- prometheus.MustNewConstMetric(nc.throughput, prometheus.GaugeValue, p.Total)
	for _, g := range p.GPUs {
		gpu := strconv.Itoa(g.Index)
		withMPS, without := 0, 0
		for _, in := range g.Instances {
			if in.MPS {
				withMPS++
			} else {
				without++
			}
			ch <- prometheus.MustNewConstMetric(nc.instJobs, prometheus.GaugeValue, float64(len(in.Jobs)), gpu, instanceLabel(in), in.Profile)
		}
		ch <- prometheus.MustNewConstMetric(nc.instances, prometheus.GaugeValue, float64(withMPS), gpu, "true")
		ch <- prometheus.MustNewConstMetric(nc.instances, prometheus.GaugeValue, float64(without), gpu, "false")
	}
}

// instanceLabel names an instance in a label as everywhere else
// ("gpu0/gi1"); a view without names (a test's) by its key, else its
// index.
func instanceLabel(in node.InstanceView) string {
	switch {
	case in.Name != "":
		return in.Name
	case in.Key != "":
		return in.Key
	}
	return strconv.Itoa(in.Index)
}

func (nc *nodeCollector) collectSched(ch chan<- prometheus.Metric, sv node.SchedView) {
	c := sv.Counters
	inst := sv.Name
	if inst == "" {
		inst = sv.Instance
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), inst, sv.Policy)
	}
	counter(nc.kernels, c.Kernels)
	counter(nc.atOnce, c.AtOnce)
	counter(nc.held, c.Held)
	counter(nc.filled, c.Filled)
	counter(nc.failOpens, c.FailOpens)
	counter(nc.went, c.Went)
	counter(nc.unprofiled, c.Unprofiled)
	counter(nc.refused, c.Refused)
	counter(nc.waits, c.Waits)
	counter(nc.observed, c.Observed)
	counter(nc.unobserved, c.Unobserved)
	counter(nc.late, c.LoudLate)
	counter(nc.badReports, c.BadReports)
	counter(nc.uncorroborated, c.Uncorroborated)
	counter(nc.reportsLimited, c.ReportsLimited)
	ch <- prometheus.MustNewConstMetric(nc.tasks, prometheus.GaugeValue, float64(c.Tasks), inst, sv.Policy)
	ch <- prometheus.MustNewConstMetric(nc.quiet, prometheus.GaugeValue, float64(c.Quiet), inst, sv.Policy)
}

// newMetricsHandler returns the handler of /metrics: the node's metrics
// (when there is a node) and the Go runtime's and process's, in the
// Prometheus text format. A metric that cannot be read is left out and
// logged; the rest is served.
func newMetricsHandler(n Node, log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if n != nil {
		reg.MustRegister(newNodeCollector(n))
	}
	if u, ok := n.(UsageNode); ok {
		reg.MustRegister(newJobCollector(u))
	}
	if sn, ok := n.(SLONode); ok {
		reg.MustRegister(newSLOCollector(sn))
	}
	if hn, ok := n.(HealthNode); ok {
		reg.MustRegister(newHealthCollector(hn))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      promLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// serveMetrics serves GET /metrics.
func (s *Server) serveMetrics(c *gin.Context) {
	s.metrics.ServeHTTP(c.Writer, c.Request)
}

// promLogger passes promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

// Println logs one error of a scrape.
func (l promLogger) Println(v ...any) { l.log.Error("metrics", "err", fmt.Sprint(v...)) }
