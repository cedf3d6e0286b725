package web

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/web/webtest"
)

// TestSLOAPIAndMetrics: /api/v1/slo lists every online job against its
// target, a job's /slo gives its standing and history (404 for an unknown
// job), and /metrics carries them under DCGM exporter's device labels and
// the target, live jobs only; the names and labels are the golden list's.
func TestSLOAPIAndMetrics(t *testing.T) {
	ts := newTestServer(t)
	j := ts.submit(t, `{"command":["serve"],"type":"online","slo":"p99=25ms"}`)
	must(t, ts.node.SetState(j.ID, jobs.Running, ""))
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	view := node.SLOView{
		Jobs: []node.JobSLO{{ID: j.ID, Name: "serve", Instance: "gpu0", GPU: 0, GPUUUID: "GPU-aaa", GPUInstance: -1, Target: "p99=25ms",
			BoundMs: 25, Source: "reported", Requests: 1000, Late: 4, Attainment: 0.996, RecentN: 100, RecentLate: 1, P50Ms: 8, PctMs: 24,
			State: "met", Detail: "p99 24ms against 25ms over 100 requests, 1 late", Rung: "hold", Live: true, At: at},
			{ID: "gone", Name: "old", Target: "p99=5ms", Live: false}},
		Instances: []node.InstanceSLO{{Instance: "gpu0", Active: true, Ladder: []string{"priority", "hold", "suspend"}, Level: 1, Rung: "hold"}},
	}
	ts.node.SetSLO(view)
	r := ts.do(t, "GET", "/api/v1/slo", "")
	got := decode[node.SLOView](t, r.body)
	if r.code != 200 || len(got.Jobs) != 2 || got.Jobs[0].PctMs != 24 || got.Instances[0].Rung != "hold" {
		t.Fatalf("/api/v1/slo = %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/api/v1/jobs/"+j.ID+"/slo", "")
	one := decode[node.JobSLOView](t, r.body)
	if r.code != 200 || one.SLO == nil || one.SLO.Attainment != 0.996 || len(one.History) != 1 || one.History[0].PctMs != 24 {
		t.Fatalf("job slo = %d %s", r.code, r.body)
	}
	if r := ts.do(t, "GET", "/api/v1/jobs/nope/slo", ""); r.code != 404 {
		t.Errorf("unknown job: %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/metrics", "")
	labels := `GPU_I_ID="",GPU_I_PROFILE="",UUID="GPU-aaa",gpu="0",job_id="` + j.ID + `",job_name="serve",target="p99=25ms"`
	lines := strings.Split(r.body, "\n")
	for _, line := range []string{
		"mmk_job_requests_total{" + labels + "} 1000", "mmk_job_requests_late_total{" + labels + "} 4",
		"mmk_job_slo_attainment{" + labels + "} 0.996", "mmk_job_slo_recent_attainment{" + labels + "} 0.99",
		"mmk_job_latency_p50_seconds{" + labels + "} 0.008", "mmk_job_latency_target_percentile_seconds{" + labels + "} 0.024",
		"mmk_job_latency_bound_seconds{" + labels + "} 0.025", `mmk_instance_slo_rung{instance="gpu0",rung="hold"} 1`,
	} {
		if !slices.Contains(lines, line) {
			t.Errorf("metrics lack %s:\n%s", line, r.body)
		}
	}
	if strings.Contains(r.body, `job_id="gone"`) {
		t.Error("a job no longer connected is in /metrics")
	}
	names, err := webtest.JobMetrics(r.body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := webtest.ReadGolden("testdata/slo-metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, want) {
		t.Errorf("per-job latency metrics differ from testdata/slo-metrics.golden:\n%s", strings.Join(names, "\n"))
	}
}
