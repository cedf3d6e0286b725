package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
	"github.com/mmkgpu/mmk/web"
	"github.com/mmkgpu/mmk/web/webtest"
)

// flatEstimator gives every job the instance's share of the GPU.
type flatEstimator struct{}

func (flatEstimator) Speed(_ partitioner.Job, sms, gpuSMs, _ int, _ []partitioner.Share) (float64, error) {
	return float64(sms) / float64(gpuSMs), nil
}

// TestJobMetricsOnFakeGPUs: mmkd's /metrics (the real node and API) on fake GPUs that
// report per-process use: two running jobs (one in a MIG instance, one on
// a GPU without MIG) whose processes the fake lists with memory and
// utilisation export what NVML reported, under the golden list's names
// and labels.
func TestJobMetricsOnFakeGPUs(t *testing.T) {
	b, f, err := nvmlbackend.OpenFake(1, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0"}, {Model: "H200-141GB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: os.Args[0],
		ShimArgs: []string{"shim"}, StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{Backend: b, Store: store, Runner: runner, Estimator: flatEstimator{}, AllowRoot: true,
		UsageEvery: 10 * time.Millisecond, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	srv := httptest.NewServer(web.New(web.Options{Backend: b, Node: n}).Handler())
	defer srv.Close()
	scrape := func() string {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
		}
		return string(body)
	}
	gate := filepath.Join(dir, "go")
	var running []jobs.Job
	defer func() {
		_ = os.WriteFile(gate, nil, 0o600)
		for _, j := range running {
			waitJob(t, n, j.ID, func(j jobs.Job) bool { return j.State.Terminal() && j.ExitCode != nil })
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for _, name := range []string{"a", "b"} {
		j, _, err := n.Submit(ctx, jobs.Spec{Name: name, Command: []string{"sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.01; done"}, Kind: jobs.Offline, MemoryMiB: 60000}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, waitJob(t, n, j.ID, func(j jobs.Job) bool { return j.State == jobs.Running }))
	}
	for i, j := range running {
		mig := ""
		if j.Placement.Profile != "" {
			mig = j.Placement.Device
		}
		if err := f.AttachProcess(j.Placement.GPU, mig, uint32(j.PID), int64(1000*(i+1))); err != nil {
			t.Fatal(err)
		}
		if err := f.SetProcessUtilization(uint32(j.PID), 40, 20); err != nil {
			t.Fatal(err)
		}
		defer f.DetachProcess(uint32(j.PID))
	}
	// fbLine is a job's mmk_job_fb_used line at mem MiB, "" while there is none.
	fbLine := func(body string, j jobs.Job, mem string) string {
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "mmk_job_fb_used{") && strings.Contains(l, `job_id="`+j.ID+`"`) && strings.HasSuffix(l, " "+mem) {
				return l
			}
		}
		return ""
	}
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; {
		body = scrape()
		if fbLine(body, running[0], "1000") != "" && fbLine(body, running[1], "2000") != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, j := range running {
		l := fbLine(body, j, []string{"1000", "2000"}[i])
		switch {
		case l == "":
			t.Errorf("no mmk_job_fb_used line of job %s at its processes' memory:\n%s", j.ID, body)
		case j.Placement.Profile != "" && !strings.Contains(l, `GPU_I_PROFILE="7g.80gb"`):
			t.Errorf("the MIG job's line %s lacks its profile", l)
		}
	}
	if c := strings.Count(body, "mmk_job_sm_util{"); c != 1 || !strings.Contains(body, `GPU_I_PROFILE="",UUID=`) || !strings.Contains(body, `"} 40`) {
		t.Errorf("%d mmk_job_sm_util lines, want the one job off MIG at 40:\n%s", c, body)
	}
	got, err := webtest.JobMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := webtest.ReadGolden("../../web/testdata/job-metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(s string) bool { return strings.HasPrefix(s, "mmk_job_fb_limit{") }) // no MPS here: no limit
	if !slices.Equal(got, want) {
		t.Errorf("per-job metrics differ from web/testdata/job-metrics.golden:\n%s", strings.Join(got, "\n"))
	}
}

func waitJob(t *testing.T, n *node.Node, id string, ok func(jobs.Job) bool) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := n.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %s (%s)", id, j.State, j.Reason)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
