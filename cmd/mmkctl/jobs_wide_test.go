package main

import (
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
