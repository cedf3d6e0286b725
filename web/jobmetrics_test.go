package web

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/web/webtest"
)

// TestJobMetrics: every running job's GPU use in /metrics, labelled as
// DCGM exporter labels devices (MIG profile and instance id only on MIG
// instances), utilisation only where NVML gives it, the limit only where
// there is one; the names and labels are the golden list's.
func TestJobMetrics(t *testing.T) {
	ts := newTestServer(t)
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ts.node.SetUsage(node.UsageView{At: at, Every: time.Second, Jobs: []node.JobUsage{
		{ID: "j1", Name: "bert", GPU: 0, GPUUUID: "GPU-aaa", Device: "MIG-bbb", GPUInstance: 2, Profile: "3g.40gb",
			Processes: 1, UsedMemoryMiB: 3000, PeakMemoryMiB: 3500, LimitMiB: 4505, At: at},
		{ID: "j2", Name: "resnet", GPU: 2, GPUUUID: "GPU-ccc", Device: "GPU-ccc", GPUInstance: -1,
			Processes: 2, UsedMemoryMiB: 1500, PeakMemoryMiB: 1500, Util: true, SMUtil: 50, MemUtil: 15, At: at},
	}})
	r := ts.do(t, "GET", "/metrics", "")
	if r.code != 200 {
		t.Fatalf("metrics = %d %s", r.code, r.body)
	}
	lines := strings.Split(r.body, "\n")
	mig := `GPU_I_ID="2",GPU_I_PROFILE="3g.40gb",UUID="GPU-aaa",gpu="0",job_id="j1",job_name="bert"`
	whole := `GPU_I_ID="",GPU_I_PROFILE="",UUID="GPU-ccc",gpu="2",job_id="j2",job_name="resnet"`
	for _, line := range []string{
		"mmk_job_fb_used{" + mig + "} 3000", "mmk_job_fb_used_max{" + mig + "} 3500", "mmk_job_fb_limit{" + mig + "} 4505",
		"mmk_job_gpu_processes{" + mig + "} 1",
		"mmk_job_fb_used{" + whole + "} 1500", "mmk_job_sm_util{" + whole + "} 50", "mmk_job_mem_util{" + whole + "} 15",
		"mmk_job_gpu_processes{" + whole + "} 2",
		"mmk_job_usage_sampled_timestamp_seconds " + strconv.FormatFloat(float64(at.Unix()), 'g', -1, 64),
	} {
		if !slices.Contains(lines, line) {
			t.Errorf("metrics lack the line %s:\n%s", line, r.body)
		}
	}
	for _, absent := range []string{"mmk_job_sm_util{" + mig, "mmk_job_fb_limit{" + whole} {
		if strings.Contains(r.body, absent) {
			t.Errorf("metrics have %s", absent)
		}
	}
	got, err := webtest.JobMetrics(r.body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := webtest.ReadGolden("testdata/job-metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("per-job metrics differ from testdata/job-metrics.golden:\n%s", strings.Join(got, "\n"))
	}
}

// TestJobMetricsBeforeSample: nothing per job until the first sample.
func TestJobMetricsBeforeSample(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "GET", "/metrics", "")
	if r.code != 200 || strings.Contains(r.body, "mmk_job_") {
		t.Errorf("metrics before a sample = %d, has mmk_job_: %v", r.code, strings.Contains(r.body, "mmk_job_"))
	}
}

// TestUsageAPI: /api/v1/usage lists the running jobs' use; a job's
// /usage gives its use and history, 404 for an unknown job.
func TestUsageAPI(t *testing.T) {
	ts := newTestServer(t)
	j := ts.submit(t, `{"command":["x"],"memory":"2GiB"}`)
	must(t, ts.node.SetState(j.ID, jobs.Running, ""))
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for i, mem := range []int64{100, 900} {
		ts.node.SetUsage(node.UsageView{At: at.Add(time.Duration(i) * time.Second), Every: time.Second, Jobs: []node.JobUsage{
			{ID: j.ID, Name: "x", GPUInstance: -1, UsedMemoryMiB: mem, PeakMemoryMiB: 900, Util: true, SMUtil: 40, At: at}}})
	}
	r := ts.do(t, "GET", "/api/v1/usage", "")
	if r.code != 200 || !strings.Contains(r.body, `"usedMemoryMiB":900`) || !strings.Contains(r.body, `"everyNs":1000000000`) {
		t.Errorf("usage = %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/api/v1/jobs/"+j.ID+"/usage", "")
	if r.code != 200 || !strings.Contains(r.body, `"history":[{"t":"2026-11-25T10:00:00Z","usedMemoryMiB":100`) || !strings.Contains(r.body, `"usage":{"id":"`+j.ID) {
		t.Errorf("job usage = %d %s", r.code, r.body)
	}
	if r := ts.do(t, "GET", "/api/v1/jobs/nope/usage", ""); r.code != 404 {
		t.Errorf("unknown job's usage = %d %s", r.code, r.body)
	}
}
