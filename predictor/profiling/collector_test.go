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
// percentage less its client priority. A job named boom_* dies before it
// is ready.
const fakeWorkload = `job=$2
case $job in boom_*) echo "no such model" >&2; exit 3;; esac
echo ready
read line || exit 0
echo warm
read line || exit 0
echo measuring
read line || exit 0
pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-100}
prio=${CUDA_MPS_CLIENT_PRIORITY:-0}
echo "{\"job\":\"$job\",\"batch\":8,\"iters\":10,\"items_per_s\":$((pct - prio)),\"iter_ms_p50\":$((1000 / pct)),\"iter_cv\":0.05}"
`

// fakeMeter reports a utilisation that grows with each measurement.
type fakeMeter struct{ n float64 }

func (m *fakeMeter) Start() error { return nil }
func (m *fakeMeter) Stop() (predictor.Util, error) {
	m.n++
	return predictor.Util{SM: m.n, Occupancy: 1, DRAM: 2, GPU: 3, Mem: 4}, nil
}

func campaign(t *testing.T, dir string, steps []predictor.Step) (Result, error) {
	script := filepath.Join(dir, "fake.sh")
	if err := os.WriteFile(script, []byte(fakeWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	return Collect(context.Background(), Config{
		Python: "/bin/sh", Script: script, Warmup: time.Millisecond, Measure: time.Millisecond, Steps: steps,
		Out: filepath.Join(dir, "samples.csv"), Header: predictor.Header{"gpu": "fake"}, HeaderKeys: []string{"gpu"},
		ClientEnv: func(m predictor.Member) []string {
			return []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + strconv.Itoa(m.Percent), "CUDA_MPS_CLIENT_PRIORITY=" + strconv.Itoa(m.Priority)}
		},
		SMs: 132, Meter: &fakeMeter{}, Timeout: 10 * time.Second,
	})
}

func TestCollectResumesAndSkipsFailures(t *testing.T) {
	dir := t.TempDir()
	runs, err := predictor.Plan(predictor.PlanSpec{Jobs: []string{"a_infer", "b_train", "c_train"}, AlonePercents: []int{50, 100}, Pairs: 2, Triples: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	steps := predictor.Steps(runs, 1, 1)
	// Stopped after four runs...
	res, err := campaign(t, dir, steps[:4])
	if err != nil || res.Done != 4 {
		t.Fatalf("first part: %+v, %v", res, err)
	}
	// ...resumed: the four are not run again; a job that crashes fails
	// its run and the campaign goes on.
	all := append(steps, predictor.Step{Run: predictor.Run{{Job: "boom_train", Percent: 100}}})
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
	if res, err := campaign(t, dir, predictor.Steps(runs, 1, 1)); err != nil || res.Done != 3 {
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
	res, err := campaign(t, dir, predictor.Steps(runs, 1, 1))
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

// TestCollectRepetitionsAndPriorities: every run is measured once per
// repetition, interleaved; each member runs at its client priority (the
// fake's speed shows it); the samples carry the repetition, the
// priority, the co-runners' shares and their SM use above and below; a
// campaign stopped in the second repetition resumes where it stopped.
func TestCollectRepetitionsAndPriorities(t *testing.T) {
	dir := t.TempDir()
	runs := []predictor.Run{
		{{Job: "a_infer", Percent: 100}}, {{Job: "b_train", Percent: 100}}, {{Job: "b_train", Percent: 50}}, {{Job: "a_infer", Percent: 50}},
		predictor.AsPlaced(predictor.Run{{Job: "a_infer", Percent: 100}, {Job: "b_train", Percent: 50}}),
		{{Job: "a_infer", Percent: 50}, {Job: "b_train", Percent: 100}},
	}
	steps := predictor.Steps(runs, 3, 7)
	if res, err := campaign(t, dir, steps[:len(runs)+2]); err != nil || res.Done != len(runs)+2 {
		t.Fatalf("first part: %+v, %v", res, err)
	}
	res, err := campaign(t, dir, steps)
	if err != nil || res.AlreadyDone != len(runs)+2 || res.Done != len(steps)-len(runs)-2 {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	f, _ := os.Open(filepath.Join(dir, "samples.csv"))
	defer f.Close()
	_, samples, err := predictor.ReadSamples(f)
	if err != nil || len(samples) != 3*8 {
		t.Fatalf("%d samples, %v; want 24 (3 repetitions of 4 alone runs and 2 pairs)", len(samples), err)
	}
	reps := map[string]int{}
	for _, s := range samples {
		reps[s.Run]++
		if !s.Extended || s.IterCV != 0.05 || s.ItemsPerS != float64(s.MPSPercent-s.MPSPriority) {
			t.Fatalf("sample %+v: want extended, iter_cv 0.05, speed = percent - priority", s)
		}
		placed := strings.Contains(s.Run, "/p1")
		switch {
		case s.CoRunners == 0:
			if s.MPSPriority != 0 || s.CoMPSPct != 0 || s.CoAboveSM != 0 || s.CoBelowSM != 0 {
				t.Fatalf("alone sample %+v", s)
			}
		case placed && s.Job == "b_train":
			if s.MPSPriority != 1 || s.CoMPSPct != 100 || s.CoAboveSM == 0 || s.CoBelowSM != 0 {
				t.Fatalf("offline sample below its online co-runner: %+v", s)
			}
		case placed:
			if s.MPSPriority != 0 || s.CoMPSPct != 50 || s.CoAboveSM != 0 || s.CoBelowSM == 0 {
				t.Fatalf("online sample above its offline co-runner: %+v", s)
			}
		default:
			if s.MPSPriority != 0 || s.CoAboveSM != 0 || s.CoBelowSM != 0 {
				t.Fatalf("sample at equal priorities: %+v", s)
			}
		}
	}
	for run, n := range reps {
		members, _ := predictor.ParseRunKey(run)
		if n != 3*len(members) {
			t.Fatalf("run %s has %d samples, want 3 repetitions of %d", run, n, len(members))
		}
	}
}
