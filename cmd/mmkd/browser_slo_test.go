package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/web/webtest"
)

// TestDashboardLatencyView: the latency page lists every online job's
// target, its latency now against its bound and its standing, and each
// instance's rung, the offline jobs it restrains and its last decision;
// a restrained trainer says so in the jobs table and on its page, with
// the service it is restrained for; and the latency chart's axis is
// logarithmic, so that a spike of 20 times the bound leaves the bound
// readable (issue 53, items 3 and 4); the job's page says what its
// latency alone was measured at (item 2).
func TestDashboardLatencyView(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	ctx := context.Background()
	svc, _, err := n.Submit(ctx, jobs.Spec{Name: "svc", Command: []string{"serve"}, Kind: jobs.Online, SLO: "p99=7.8ms"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	trainer, _, err := n.Submit(ctx, jobs.Spec{Name: "trainer", Command: []string{"train"}, Kind: jobs.Offline}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{svc.ID, trainer.ID} {
		if err := n.SetState(id, jobs.Running, "started"); err != nil {
			t.Fatal(err)
		}
	}
	reason := "priority -> suspend: tighten: the cheapest rung forecast to hold every target: svc#1 96.0 % in time on priority at 40.0 requests/s"
	now := time.Now()
	for i, pct := range []float64{5, 162, 6} {
		late := 0
		if pct > 7.8 {
			late = 9
		}
		n.SetSLO(node.SLOView{
			Jobs: []node.JobSLO{{ID: svc.ID, Name: "svc", Instance: "gpu0", GPUInstance: -1, Target: "p99=7.8ms", BoundMs: 7.8, Source: "hook",
				Requests: uint64(400 * (i + 1)), Late: 9, Attainment: 1 - 9/float64(400*(i+1)), RecentN: 400, RecentLate: late,
				P50Ms: 3, PctMs: pct, Rate: 40, AloneMs: 2.6, AloneN: 64, State: "met", Detail: "p99 6ms within 7.8ms over 400 requests, 0 late", Rung: "suspend", Live: true,
				At: now.Add(time.Duration(i) * time.Second)}},
			Instances: []node.InstanceSLO{{Instance: "gpu0", Active: true, Ladder: []string{"priority", "tpcs=0.5", "suspend"}, Level: 2, Rung: "suspend",
				Suspended:    []string{trainer.ID},
				Restrained:   map[string]*jobs.Restraint{trainer.ID: {State: "suspended", How: "suspended", Rung: "suspend", For: []string{svc.ID}, Reason: reason}},
				LastDecision: &node.SLODecision{Time: now, From: 0, To: 2, Rung: "suspend", Reason: reason}}},
		})
	}
	srv := serveFakeNode(t, n)

	page(t, b, "the latency view",
		chromedp.Navigate(srv.URL+"/#/slo"),
		waitFor(`document.querySelectorAll('#slo-jobs-body tr').length === 1`),
		waitFor(`document.querySelector('#slo-jobs-body').textContent.includes('p99=7.8ms')`),
		waitFor(`document.querySelector('#slo-inst-body').textContent.includes('trainer: suspended')`),
		waitFor(`document.querySelector('#slo-inst-body').textContent.includes('priority -> suspend: tighten')`),
	)
	row := eval[string](t, b, `document.querySelector('#slo-jobs-body tr').textContent`)
	for _, want := range []string{"svc", "gpu0", "7.80 ms", "6.00 ms", "3.00 ms", "100.00 %", "99.25 %", "40.0/s", "met"} {
		if !strings.Contains(row, want) {
			t.Errorf("the service's row %q lacks %q", row, want)
		}
	}

	page(t, b, "a restrained job in the jobs table",
		chromedp.Navigate(srv.URL+"/#/jobs"),
		waitFor(`document.querySelector('#jobs-body tr[data-job="`+trainer.ID+`"]') !== null`),
		waitFor(`document.querySelector('#jobs-body tr[data-job="`+trainer.ID+`"]').textContent.includes('running (suspended)')`),
	)
	if title := eval[string](t, b, `document.querySelector('#jobs-body tr[data-job="`+trainer.ID+`"] td:nth-child(5) span').title`); !strings.Contains(title, "suspended for the target of svc ("+svc.ID+")") || !strings.Contains(title, reason) {
		t.Errorf("the restrained job's state says %q", title)
	}
	if got := eval[string](t, b, `document.querySelector('#jobs-body tr[data-job="`+svc.ID+`"] td:nth-child(5)').textContent`); got != "running" {
		t.Errorf("the service's state reads %q", got)
	}

	page(t, b, "a restrained job's page",
		chromedp.Navigate(srv.URL+"/#/jobs/"+trainer.ID),
		waitFor(`document.querySelector('#job-state').textContent === 'running (suspended)'`),
		waitFor(`document.querySelector('#job-details').textContent.includes('Restrained')`),
		waitFor(`document.querySelector('#job-details a[href="#/jobs/`+svc.ID+`"]') !== null`),
	)

	// The service's chart: a 162 ms spike over a 7.8 ms bound. On a
	// linear axis the bound sat 4 % above the floor; on the log axis it
	// is well inside the chart.
	page(t, b, "the service's latency chart",
		chromedp.Navigate(srv.URL+"/#/jobs/"+svc.ID),
		waitFor(`document.querySelector('#job-slo-chart polyline.bound') !== null`),
		// What the alone probe measured (issue 53, item 2).
		waitFor(`document.querySelector('#job-slo-now').textContent.includes('alone 2.60 ms at its percentile over 64 requests')`),
	)
	share := eval[float64](t, b, `(() => {
		const y = document.querySelector('#job-slo-chart polyline.bound').points.getItem(0).y;
		return (120 - y) / 120;
	})()`)
	if share < 0.25 || share > 0.75 {
		t.Errorf("the bound is drawn at %.2f of the chart's height, want it readable (between a quarter and three quarters)", share)
	}
	checkPage(t, b, srv.URL, "")
}
