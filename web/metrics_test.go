package web

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// TestMetricsCountEveryWaitingJob: mmk_jobs_waiting counts every
// waiting job, not only the node.MaxWaitingShown the plan lists.
func TestMetricsCountEveryWaitingJob(t *testing.T) {
	ts := newTestServer(t)
	p := samplePlan()
	p.WaitingTotal = node.MaxWaitingShown + 500
	ts.node.SetPlan(p)
	r := ts.do(t, "GET", "/metrics", "")
	want := fmt.Sprintf("mmk_jobs_waiting %d", node.MaxWaitingShown+500)
	if r.code != 200 || !slices.Contains(strings.Split(r.body, "\n"), want) {
		t.Errorf("metrics = %d, want the line %s", r.code, want)
	}
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t)
	ts.node.SetPlan(samplePlan())
	ts.node.SetSchedulers(sampleScheds())
	on := ts.submit(t, `{"command":["x"],"type":"online"}`)
	must(t, ts.node.SetState(on.ID, jobs.Running, ""))
	ts.submit(t, `{"command":["x"]}`)
	ts.submit(t, `{"command":["x"]}`)
	now := time.Now()
	ts.node.Put(jobs.Job{ID: "0000000000000099", Spec: jobs.Spec{Command: []string{"x"}, Kind: jobs.Offline}, State: jobs.Running, CreatedAt: now, UpdatedAt: now,
		Restraint: &jobs.Restraint{State: "suspended", How: "suspended", Rung: "suspend", For: []string{on.ID}}})

	r := ts.do(t, "GET", "/metrics", "")
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics = %d %s (%s)", r.code, r.body, r.header.Get("Content-Type"))
	}
	lines := strings.Split(r.body, "\n")
	for _, want := range []string{
		`mmk_jobs{state="running",type="online"} 1`,
		`mmk_jobs{state="pending",type="offline"} 2`,
		`mmk_job_restrained{for="` + on.ID + `",job="0000000000000099",state="suspended"} 1`,
		`mmk_jobs{state="failed",type="online"} 0`,
		`mmk_jobs_waiting 1`,
		`mmk_placement_decisions_total 7`,
		`mmk_placement_decide_seconds_total 0.042`,
		`mmk_predicted_throughput 0.63`,
		`mmk_instances{gpu="0",mps="true"} 1`,
		`mmk_instances{gpu="0",mps="false"} 1`,
		`mmk_instances{gpu="1",mps="true"} 1`,
		`mmk_instance_jobs{gpu="0",instance="gpu0/gi1",profile="3g.40gb"} 2`,
		`mmk_instance_jobs{gpu="1",instance="gpu1",profile=""} 0`,
		`mmk_kernelsched_kernels_total{instance="gpu0/gi1",policy="fikit"} 1000`,
		`mmk_kernelsched_held_total{instance="gpu0/gi1",policy="fikit"} 300`,
		`mmk_kernelsched_filled_total{instance="gpu0/gi1",policy="fikit"} 120`,
		`mmk_kernelsched_fail_opens_total{instance="gpu0/gi1",policy="fikit"} 3`,
		`mmk_kernelsched_went_total{instance="gpu0/gi1",policy="fikit"} 1`,
		`mmk_kernelsched_observed_total{instance="gpu0/gi1",policy="fikit"} 250`,
		`mmk_kernelsched_unobserved_total{instance="gpu0/gi1",policy="fikit"} 2`,
		`mmk_kernelsched_tasks{instance="gpu0/gi1",policy="fikit"} 2`,
		`mmk_kernelsched_quiet_tasks{instance="gpu0/gi1",policy="fikit"} 1`,
		`mmk_kernelsched_loud_late_total{instance="gpu0/gi1",policy="fikit"} 4`,
		`mmk_kernelsched_bad_reports_total{instance="gpu0/gi1",policy="fikit"} 6`,
		`mmk_kernelsched_uncorroborated_reports_total{instance="gpu0/gi1",policy="fikit"} 7`,
		`mmk_kernelsched_reports_limited_total{instance="gpu0/gi1",policy="fikit"} 8`,
		`mmk_kernelsched_kernels_total{instance="gpu1",policy="mmk"} 0`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("metrics lack the line %s", want)
		}
	}
	if !strings.Contains(r.body, "go_goroutines") {
		t.Error("metrics lack the Go runtime's")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v", err)
	}
	for name, f := range families {
		if strings.HasPrefix(name, "mmk_") && f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
	}
}

// TestMetricsNodeFailure checks that a node that cannot list its jobs
// leaves those metrics out, logs why and serves the rest.
func TestMetricsNodeFailure(t *testing.T) {
	ts := newTestServer(t)
	ts.node.SetPlan(samplePlan())
	ts.node.Fail(errors.New("store: disk gone"))
	r := ts.do(t, "GET", "/metrics", "")
	if r.code != 200 || strings.Contains(r.body, "mmk_jobs{") || !strings.Contains(r.body, "mmk_placement_decisions_total 7") {
		t.Errorf("metrics of a failing node = %d %s", r.code, r.body)
	}
	if !strings.Contains(ts.log.String(), "disk gone") {
		t.Errorf("failure not logged: %s", ts.log.String())
	}
}

// TestMetricsWaitingByReason: /metrics counts the waiting jobs by what
// holds them (issue 37, item 3), every class from the first scrape.
func TestMetricsWaitingByReason(t *testing.T) {
	ts := newTestServer(t)
	p := samplePlan()
	p.WaitingByClass = map[string]int{node.WaitMemory: 2, node.WaitMIG: 1}
	ts.node.SetPlan(p)
	body := ts.do(t, "GET", "/metrics", "").body
	for _, want := range []string{
		`mmk_jobs_waiting_by_reason{reason="memory"} 2`,
		`mmk_jobs_waiting_by_reason{reason="mig"} 1`,
		`mmk_jobs_waiting_by_reason{reason="share"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
