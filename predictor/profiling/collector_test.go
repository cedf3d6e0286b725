package profiling

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/predictor"
)

// fakeWorkload speaks workload.py's protocol (ready, go, warm, measure,
// measuring, stop, result) without a GPU: its speed is its MPS
// percentage. A job named boom_* dies before it is ready.
const fakeWorkload = `job=$2
case $job in boom_*) echo "no such model" >&2; exit 3;; esac
echo ready
read line || exit 0
echo warm
read line || exit 0
echo measuring
read line || exit 0
pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-100}
echo "{\"job\":\"$job\",\"batch\":8,\"iters\":10,\"items_per_s\":$pct,\"iter_ms_p50\":$((1000 / pct))}"
`

// fakeMeter reports a utilisation that grows with each measurement.
type fakeMeter struct{ n float64 }

func (m *fakeMeter) Start() error { return nil }
func (m *fakeMeter) Stop() (predictor.Util, error) {
	m.n++
	return predictor.Util{SM: m.n, Occupancy: 1, DRAM: 2, GPU: 3, Mem: 4}, nil
}

func campaign(t *testing.T, dir string, runs []predictor.Run) (Result, error) {
	script := filepath.Join(dir, "fake.sh")
	if err := os.WriteFile(script, []byte(fakeWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	return Collect(context.Background(), Config{
		Python: "/bin/sh", Script: script, Warmup: time.Millisecond, Measure: time.Millisecond, Runs: runs,
		Out: filepath.Join(dir, "samples.csv"), Header: predictor.Header{"gpu": "fake"}, HeaderKeys: []string{"gpu"},
		ClientEnv: func(p int) []string { return []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + strconv.Itoa(p)} },
		SMs:       132, Meter: &fakeMeter{}, Timeout: 10 * time.Second,
	})
}

func TestCollectResumesAndSkipsFailures(t *testing.T) {
	dir := t.TempDir()
	runs, err := predictor.Plan(predictor.PlanSpec{Jobs: []string{"a_infer", "b_train", "c_train"}, AlonePercents: []int{50, 100}, Pairs: 2, Triples: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Stopped after four runs...
	res, err := campaign(t, dir, runs[:4])
	if err != nil || res.Done != 4 {
		t.Fatalf("first part: %+v, %v", res, err)
	}
	// ...resumed: the four are not run again; a job that crashes fails
	// its run and the campaign goes on.
	all := append(runs, predictor.Run{{Job: "boom_train", Percent: 100}})
	res, err = campaign(t, dir, all)
	if err != nil || res.AlreadyDone != 4 || res.Done != len(runs)-4 || res.Failed != 1 {
		t.Fatalf("resumed: %+v, %v (plan of %d runs)", res, err, len(runs))
	}
	f, err := os.Open(filepath.Join(dir, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, samples, err := predictor.ReadSamples(f)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range runs {
		want += len(r)
	}
	if h["gpu"] != "fake" || len(samples) != want {
		t.Fatalf("header %v, %d samples, want %d", h, len(samples), want)
	}
	alone := map[string]predictor.Util{}
	for _, s := range samples {
		if s.CoRunners == 0 {
			alone[s.Run] = s.RunUtil
		}
	}
	for _, s := range samples {
		if s.ItemsPerS != float64(s.MPSPercent) || s.Kind != predictor.KindOf(s.Job) || s.SMs != 132 {
			t.Fatalf("sample %+v", s)
		}
		if s.JobUtil != alone[s.Job+"@100"] {
			t.Fatalf("%s in %s: job features %v, want its alone run at 100 %% %v", s.Job, s.Run, s.JobUtil, alone[s.Job+"@100"])
		}
		if s.CoRunners > 0 && s.CoUtil.DRAM != 2*float64(s.CoRunners) {
			t.Fatalf("%s in %s: co-runner features %v", s.Job, s.Run, s.CoUtil)
		}
	}
}

func TestCollectDropsAnUnfinishedRun(t *testing.T) {
	dir := t.TempDir()
	runs, err := predictor.Plan(predictor.PlanSpec{Jobs: []string{"a_infer", "b_train"}, AlonePercents: []int{100}, Pairs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := campaign(t, dir, runs); err != nil || res.Done != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
	// A crash in the middle of the pair's second line: the pair's first
	// row stands whole, its second is torn.
	path := filepath.Join(dir, "samples.csv")
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	torn := strings.Join(lines[:len(lines)-2], "") + lines[len(lines)-2][:10]
	if err := os.WriteFile(path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := campaign(t, dir, runs)
	if err != nil || res.AlreadyDone != 2 || res.Done != 1 {
		t.Fatalf("after the crash: %+v, %v", res, err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	_, samples, err := predictor.ReadSamples(f)
	if err != nil || len(samples) != 4 {
		t.Fatalf("%d samples, %v; want 4 (2 alone, 2 of the pair)", len(samples), err)
	}
}
