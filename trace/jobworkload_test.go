package trace

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// TestSyntheticJobs: the testbed draws 40 online and 20 offline jobs of
// Table III types, work and loads in the stated ranges, arrivals in
// order.
func TestSyntheticJobs(t *testing.T) {
	jobs, err := SyntheticJobs(Synthetic{Online: 40, Offline: 20, GPUs: 2, Load: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	on := 0
	for i, j := range jobs {
		jt, ok := LookupJobType(j.Type)
		if !ok || jt.Online != j.Online || j.MemoryMiB != jt.MemoryMiB {
			t.Fatalf("job %+v does not match its type %+v", j, jt)
		}
		span := offlineWork
		if j.Online {
			on++
			span = onlineWork
			if j.Load < onlineLoad[0] || j.Load > onlineLoad[1] {
				t.Errorf("job %s load %v outside %v", j.ID, j.Load, onlineLoad)
			}
		} else if j.Load != 0 {
			t.Errorf("offline job %s has load %v", j.ID, j.Load)
		}
		if j.Work < span[0]-time.Second || j.Work > span[1]+time.Second {
			t.Errorf("job %s work %v outside %v", j.ID, j.Work, span)
		}
		if i > 0 && j.Arrival < jobs[i-1].Arrival {
			t.Errorf("arrivals out of order at %d", i)
		}
	}
	if on != 40 || len(jobs) != 60 {
		t.Errorf("%d jobs, %d online: want 60 and 40", len(jobs), on)
	}
}

// TestSyntheticLoad: the work the jobs bring per second of arrivals is
// the load times the GPUs (within the noise of 1200 draws), and doubling
// the load halves the arrival span.
func TestSyntheticLoad(t *testing.T) {
	offered := func(load float64) (float64, time.Duration) {
		jobs, err := SyntheticJobs(Synthetic{Online: 800, Offline: 400, GPUs: 8, Load: load}, 3)
		if err != nil {
			t.Fatal(err)
		}
		work := 0.0
		for _, j := range jobs {
			if j.Online {
				work += j.Work.Seconds() * j.Load
			} else {
				work += j.Work.Seconds()
			}
		}
		span := jobs[len(jobs)-1].Arrival
		return work / span.Seconds() / 8, span
	}
	for _, load := range []float64{0.5, 1, 1.5} {
		got, _ := offered(load)
		if math.Abs(got/load-1) > 0.1 {
			t.Errorf("load %.1f: offered %.3f of the GPUs' capacity", load, got)
		}
	}
	_, one := offered(1)
	_, two := offered(2)
	if r := one.Seconds() / two.Seconds(); math.Abs(r-2) > 1e-6 {
		t.Errorf("span at load 1 / at load 2 = %.4f, want 2", r)
	}
}

// TestSyntheticErrors: bad workloads name the fault.
func TestSyntheticErrors(t *testing.T) {
	for _, tc := range []struct {
		s    Synthetic
		want string
	}{
		{Synthetic{GPUs: 1, Load: 1}, "want at least one"},
		{Synthetic{Online: 1, GPUs: 0, Load: 1}, "gpus 0"},
		{Synthetic{Online: 1, GPUs: 1, Load: 0}, "load 0"},
		{Synthetic{Online: 1, GPUs: 1, Load: math.NaN()}, "load NaN"},
	} {
		if _, err := SyntheticJobs(tc.s, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.s, err, tc.want)
		}
	}
}

// Pod lists written from the trace's documented format
// (cluster-trace-gpu-v2023/README.md): the default and its gpuspec,
// gpushare and cpu variants have every column; the multigpu variants
// have name, cpu_milli, memory_mib, num_gpu, gpu_milli only.
const (
	openbSample = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1000,1,500,,LS,Running,100,1100,120
p1,1000,1000,2,1000,V100M16|V100M32,BE,Running,50,500,60
p2,1000,1000,1,1000,,BE,Running,200,300,210
p3,1000,1000,1,0,,BE,Running,10,300,20
p4,1000,1000,1,300,,Burstable,Pending,30,,
p5,1000,1000,0,0,,LS,Running,40,900,40
p6,1000,1000,1,250,T4,Guaranteed,Succeeded,300,700,300
`
	openbMultiGPU = `name,cpu_milli,memory_mib,num_gpu,gpu_milli
m0,12000,16384,1,1000
m1,88000,327680,8,1000
m2,4000,15258,1,220
`
)

// TestReadOpenBPods: every variant's columns are read, absent ones take
// the trace converter's meaning (gpu_milli 1000, no qos, no times).
func TestReadOpenBPods(t *testing.T) {
	pods, err := ReadOpenBPods(strings.NewReader(openbSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 7 || !pods[0].Times || pods[0].QoS != "LS" || pods[0].Milli != 500 || pods[0].ScheduledAt != 120 || !pods[0].Deleted {
		t.Fatalf("pods %+v", pods)
	}
	if pods[4].Scheduled || pods[4].Deleted || pods[1].GPUs != 2 {
		t.Errorf("pending or multi-GPU pod read wrong: %+v, %+v", pods[4], pods[1])
	}
	multi, err := ReadOpenBPods(strings.NewReader(openbMultiGPU))
	if err != nil {
		t.Fatal(err)
	}
	if len(multi) != 3 || multi[1].GPUs != 8 || multi[2].Milli != 220 || multi[0].QoS != "" || multi[0].Times {
		t.Errorf("multigpu variant read as %+v", multi)
	}
	noMilli, err := ReadOpenBPods(strings.NewReader("name,num_gpu\na,1\n"))
	if err != nil || noMilli[0].Milli != 1000 {
		t.Errorf("no gpu_milli: %+v, %v: want 1000", noMilli, err)
	}
	if _, err := OpenBJobs(multi, 0, 80000); err == nil || !strings.Contains(err.Error(), "cannot be replayed") {
		t.Errorf("a list without times replayed: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{"name,cpu_milli\n", `lacks column "num_gpu"`},
		{"name,num_gpu,creation_time\na,1,5\n", "1 of the columns"},
		{strings.Replace(openbSample, ",LS,", ",VIP,", 1), `qos "VIP"`},
		{strings.Replace(openbSample, "p0,1000,1000,1,500", "p0,1000,1000,x,500", 1), `num_gpu: "x"`},
		{strings.Replace(openbSample, "p0,1000,1000,1,500", "p0,1000,1000,1,1200", 1), "gpu_milli: 1200"},
		{strings.Replace(openbSample, "p0,1000,1000,1,500", "p0,1000,1000,1,-5", 1), "gpu_milli"},
		{strings.Replace(openbSample, "LS,Running,100,", "LS,Running,,", 1), "creation_time"},
		{"name,num_gpu\n,1\n", "name is empty"},
	} {
		if _, err := ReadOpenBPods(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestOpenBJobs is the work model: pods that ran with a GPU, in creation
// order from 0; LS and Guaranteed online with a load from their share,
// BE offline with their run time times their share as work; a two-GPU
// pod is two whole-GPU jobs.
func TestOpenBJobs(t *testing.T) {
	pods, err := ReadOpenBPods(strings.NewReader(openbSample))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := OpenBJobs(pods, 0, 80000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	if got := strings.Join(ids, " "); got != "p1/0 p1/1 p0 p2 p6" {
		t.Fatalf("jobs %s: want p1/0 p1/1 p0 p2 p6", got)
	}
	want := []SimJob{
		{ID: "p1/0", Arrival: 0, Work: 440 * time.Second, MemoryMiB: 80000},
		{ID: "p1/1", Arrival: 0, Work: 440 * time.Second, MemoryMiB: 80000},
		{ID: "p0", Online: true, Arrival: 50 * time.Second, Work: 980 * time.Second, Load: 0.5 * OpenBServiceBusy, MemoryMiB: 40000},
		{ID: "p2", Arrival: 150 * time.Second, Work: 90 * time.Second, MemoryMiB: 80000},
		{ID: "p6", Online: true, Arrival: 250 * time.Second, Work: 400 * time.Second, Load: 0.25 * OpenBServiceBusy},
	}
	for i, w := range want {
		j := jobs[i]
		jt, _ := LookupJobType(j.Type)
		if jt.Online != j.Online || j.Online != w.Online || j.Arrival != w.Arrival || j.Work != w.Work || math.Abs(j.Load-w.Load) > 1e-12 {
			t.Errorf("job %d: %+v, want %+v", i, j, w)
		}
		if w.MemoryMiB != 0 && j.MemoryMiB != w.MemoryMiB {
			t.Errorf("job %s memory %d, want %d", j.ID, j.MemoryMiB, w.MemoryMiB)
		}
	}
	if p1 := jobs[0]; p1.Type != jobs[1].Type {
		t.Errorf("the two parts of p1 have types %s and %s", p1.Type, jobs[1].Type)
	}
	first2, err := OpenBJobs(pods, 2, 80000)
	if err != nil || len(first2) != 2 {
		t.Errorf("first 2: %v, %v", first2, err)
	}
}

// FuzzReadOpenB: any input gives pods or an error, never a panic, and
// jobs made of them are usable by the simulator.
func FuzzReadOpenB(f *testing.F) {
	f.Add(openbSample)
	f.Add(openbMultiGPU)
	f.Add("name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\na,1,10,LS,1,2,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		pods, err := ReadOpenBPods(strings.NewReader(s))
		if err != nil {
			return
		}
		jobs, err := OpenBJobs(pods, 0, 80000)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.Work <= 0 || j.Arrival < 0 || j.MemoryMiB <= 0 || j.Load > 1 || j.Online != (j.Load > 0) {
				t.Fatalf("bad job %+v", j)
			}
			if _, ok := LookupJobType(j.Type); !ok {
				t.Fatalf("unknown type %q", j.Type)
			}
		}
	})
}

// TestLoadWorkload: the names resolve, openb from a folder or a file.
func TestLoadWorkload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(openbSample), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpushare.csv"), []byte(openbSample), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec, traces string
		n            int
	}{
		{"testbed", "", 60},
		{"large", "", 1200},
		{"openb", dir, 5},
		{"openb:3", filepath.Join(dir, "gpushare.csv"), 3},
	} {
		jobs, err := LoadWorkload(tc.spec, WorkloadOptions{Traces: tc.traces, Seed: 1, GPUs: 2, GPUMemMiB: 80000})
		if err != nil || len(jobs) != tc.n {
			t.Errorf("%s: %d jobs, %v: want %d", tc.spec, len(jobs), err, tc.n)
		}
	}
}

// TestLoadWorkloadErrors: bad --workload values name the fault.
func TestLoadWorkloadErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"tiny", `workload "tiny" is not one of`},
		{"testbed:4", "takes no :N"},
		{"openb:0", `N "0" is not a positive integer`},
		{"openb", "set --traces"},
		{"testbed", "gpus 0"},
	} {
		gpus := 2
		if tc.want == "gpus 0" {
			gpus = 0
		}
		if _, err := LoadWorkload(tc.spec, WorkloadOptions{Traces: t.TempDir(), Seed: 1, GPUs: gpus, GPUMemMiB: 80000}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// TestAssignSLOs: each service draws one of the targets, offline jobs
// none, and the jobs themselves are those drawn without targets.
func TestAssignSLOs(t *testing.T) {
	targets := []slo.Target{slo.MustParse("p99=1.25x"), slo.MustParse("p99=5x"), slo.MustParse("p99=40ms")}
	plain, err := LoadWorkload("testbed", WorkloadOptions{Seed: 3, GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	with, err := LoadWorkload("testbed", WorkloadOptions{Seed: 3, GPUs: 2, SLOs: targets})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[slo.Target]int{}
	for i, j := range with {
		p := plain[i]
		p.SLO = j.SLO
		if p != j {
			t.Fatalf("job %d: %+v with targets, %+v without", i, j, plain[i])
		}
		switch {
		case j.Online && !slices.Contains(targets, j.SLO):
			t.Errorf("service %s: target %v, want one of %v", j.ID, j.SLO, targets)
		case !j.Online && !j.SLO.IsZero():
			t.Errorf("offline job %s: target %v, want none", j.ID, j.SLO)
		}
		seen[j.SLO]++
	}
	for _, tg := range targets {
		if seen[tg] == 0 {
			t.Errorf("no service drew %v of 40", tg)
		}
	}
	if !plain[0].SLO.IsZero() {
		t.Errorf("without targets: %v", plain[0].SLO)
	}
}

// TestOpenBLoad: a load scales openb's recorded arrivals, the jobs the
// same.
func TestOpenBLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(openbSample), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(load float64) []SimJob {
		jobs, err := LoadWorkload("openb", WorkloadOptions{Traces: dir, Seed: 1, GPUs: 2, GPUMemMiB: 80000, Load: load})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	one, double := at(1), at(2)
	if !slices.EqualFunc(one, at(0), func(a, b SimJob) bool { return a == b }) {
		t.Errorf("load 0 differs from load 1")
	}
	for i := range one {
		if double[i].Arrival != one[i].Arrival/2 || double[i].ID != one[i].ID || double[i].Work != one[i].Work {
			t.Errorf("job %d at load 2: %+v, at load 1: %+v", i, double[i], one[i])
		}
	}
	if _, err := LoadWorkload("openb", WorkloadOptions{Traces: dir, Seed: 1, GPUs: 2, GPUMemMiB: 80000, Load: -1}); err == nil || !strings.Contains(err.Error(), "load -1") {
		t.Errorf("load -1: %v", err)
	}
}
