package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// TestJobsWide: -o wide adds each running job's GPU use (memory of its
// limit, peak, utilisation where NVML gives it) and each job's reason.
func TestJobsWide(t *testing.T) {
	n, addr := startMMKD(t, "")
	a := submitJob(t, addr, "--name", "train-a", "--memory", "2GiB", "--", "python3", "a.py")
	b := submitJob(t, addr, "--name", "mig-b", "--", "python3", "b.py")
	c := submitJob(t, addr, "--name", "done-c", "--", "python3", "c.py")
	for _, id := range []string{a, b} {
		if err := n.SetState(id, jobs.Running, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.SetState(c, jobs.Failed, "exit status 1"); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	n.SetUsage(node.UsageView{At: at, Every: time.Second, Jobs: []node.JobUsage{
		{ID: a, Name: "train-a", GPUInstance: -1, UsedMemoryMiB: 1800, PeakMemoryMiB: 2100, LimitMiB: 2252, Util: true, SMUtil: 63, MemUtil: 21, At: at},
		{ID: b, Name: "mig-b", GPUInstance: 1, Profile: "3g.40gb", UsedMemoryMiB: 900, PeakMemoryMiB: 900, At: at},
	}})
	out, err := mmkctl(t, "jobs", "--addr", addr, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "GPU MEM/LIMIT  PEAK") || !strings.Contains(lines[0], "REASON") {
		t.Errorf("header %q", lines[0])
	}
	for _, want := range []struct{ id, text string }{
		{a, "1800/2252 MiB  2100 MiB  63%  21%"},
		{b, "900 MiB        900 MiB   -    -"},
		{c, "exit status 1"},
	} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, want.id) && strings.Contains(l, want.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line of %s with %q:\n%s", want.id, want.text, out)
		}
	}
	plain, err := mmkctl(t, "jobs", "--addr", addr)
	if err != nil || strings.Contains(plain, "GPU MEM") {
		t.Errorf("plain table has the wide columns: %v\n%s", err, plain)
	}
}

// TestJobsSLO: an online job's target and standing in -o wide (its
// declared target alone before any request is measured) and in mmkctl
// job, and its view in job -o json.
func TestJobsSLO(t *testing.T) {
	n, addr := startMMKD(t, "")
	on := submitJob(t, addr, "--online", "--slo", "p99=25ms", "--name", "svc", "--", "python3", "serve.py")
	quiet := submitJob(t, addr, "--online", "--slo", "p99=2x", "--name", "new", "--", "python3", "serve.py")
	off := submitJob(t, addr, "--name", "train", "--", "python3", "train.py")
	for _, id := range []string{on, quiet, off} {
		if err := n.SetState(id, jobs.Running, ""); err != nil {
			t.Fatal(err)
		}
	}
	n.SetSLO(node.SLOView{Jobs: []node.JobSLO{{ID: on, Name: "svc", Instance: "gpu0", GPUInstance: -1, Target: "p99=25ms", BoundMs: 25,
		Source: "hook", Requests: 2000, Late: 30, Attainment: 0.985, RecentN: 200, RecentLate: 3, P50Ms: 9.5, PctMs: 27.25, Rate: 40,
		State: "missed", Detail: "p99 27.25ms against 25ms over 200 requests, 3 late", Rung: "tpcs=0.97", TPCsKept: 64, Live: true, At: time.Now()}}})
	out, err := mmkctl(t, "jobs", "--addr", addr, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "SLO") || !strings.Contains(lines[0], "ATTAINED") || !strings.Contains(lines[0], "P99/TARGET") {
		t.Errorf("header %q", lines[0])
	}
	for _, want := range []struct{ id, text string }{
		{on, "- - - - p99=25ms 98.50% 27.2/25.0 ms -"},
		{quiet, "- - - - p99=2x - - -"},
		{off, "- - - - - - - -"},
	} {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.HasPrefix(l, want.id) && strings.Contains(strings.Join(strings.Fields(l), " "), want.text)
		}) {
			t.Errorf("no line of %s with %q:\n%s", want.id, want.text, out)
		}
	}
	out, err = mmkctl(t, "job", "--addr", addr, on)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SLO:", "p99=25ms, bound 25.00 ms", "98.50% of 2000 requests (30 late), measured by the hook",
		"missed: p99 27.25ms against 25ms", "tpcs=0.97 on the offline jobs of gpu0 (a mask keeping 64 TPCs)"} {
		if !strings.Contains(out, want) {
			t.Errorf("job lacks %q:\n%s", want, out)
		}
	}
	out, err = mmkctl(t, "job", "--addr", addr, quiet)
	if err != nil || !strings.Contains(out, "p99=2x (no request measured yet)") {
		t.Errorf("job without requests: %v\n%s", err, out)
	}
	out, err = mmkctl(t, "job", "--addr", addr, on, "-o", "json")
	if err != nil || !strings.Contains(out, `"slo": {`) || !strings.Contains(out, `"pctMs": 27.25`) {
		t.Errorf("job -o json: %v\n%s", err, out)
	}
}
