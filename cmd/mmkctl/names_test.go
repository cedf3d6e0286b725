package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/dra"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web/mmkdtest"
)

// get is the body of GET url, which must answer 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// streamSnapshot is the first event of /api/v1/stream, the snapshot the
// dashboard draws from.
func streamSnapshot(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && event == "snapshot" {
			return d
		}
	}
	t.Fatalf("no snapshot in the stream: %v", sc.Err())
	return ""
}

// TestOneInstanceName (issue 37, item 5): one instance has one name on
// every surface. Jobs run on the fake GPUs, one on a MIG instance and one
// on a GPU without MIG; each instance's name is worked out from the
// backend (NVML's GPU-instance id: "gpu0/gi2"; "gpu1" for the whole GPU)
// and must be what mmkctl's JSON and tables, the API (the job, the plan,
// the GPUs, the latency controllers, and the schemas of openapi.json),
// /metrics (the instance label, the latency controllers' too), the
// dashboard's stream and the DRA driver's devices (their name
// attribute) show. Before, the same
// instance was "GI 1" (gpus), "GI 0" (plan), "instance 0" (jobs),
// "gpu0-4g.40gb-at0" (/metrics) and "4g.40gb@0" (dashboard), and the
// GPU without MIG had the profile 7g.141gb.
func TestOneInstanceName(t *testing.T) {
	if testing.Short() {
		t.Skip("starts jobs")
	}
	// Kernel scheduling and the latency controller on: each instance
	// that runs a job has a controller (the jobs run no CUDA: the hook
	// they are given is never loaded).
	dir := t.TempDir()
	d := mmkdtest.StartWith(t, []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+2g.20gb@4+1g.10gb@6"},
		{Model: "H200-141GB"},
	}, func(c *node.Config) {
		c.Sched = &node.SchedConfig{Policy: "fifo", Hook: filepath.Join(dir, "libmmkhook.so"), SocketDir: filepath.Join(dir, "run")}
		c.SLO = &node.SLOConfig{}
	})
	// The names as the backend has them, by device.
	inv, err := partitioner.ReadInventory(d.Backend)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, g := range inv {
		names[g.UUID] = "gpu" + strconv.Itoa(g.Index)
		for _, in := range g.Instances {
			names[in.UUID()] = "gpu" + strconv.Itoa(g.Index) + "/gi" + strconv.Itoa(in.ID)
		}
	}
	var ids []string
	for _, name := range []string{"a", "b"} {
		out, err := mmkctl(t, "submit", "--addr", d.URL, "-o", "json", "--name", name, "--", "sleep", "30")
		if err != nil {
			t.Fatalf("submit: %v\n%s", err, out)
		}
		var j jobs.Job
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("submit: %v\n%s", err, out)
		}
		ids = append(ids, j.ID)
	}
	want := map[string]string{} // job id -> its instance's name
	deadline := time.Now().Add(30 * time.Second)
	for len(want) < len(ids) {
		for _, id := range ids {
			out, err := mmkctl(t, "job", id, "--addr", d.URL, "-o", "json")
			if err != nil {
				t.Fatalf("job %s: %v\n%s", id, err, out)
			}
			var j jobs.Job
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatal(err)
			}
			if j.State == jobs.Running {
				want[id] = names[j.Placement.Device]
				// mmkctl job -o json
				if j.Placement.InstanceName != want[id] {
					t.Errorf("mmkctl job %s -o json: instanceName %q, want %q", id, j.Placement.InstanceName, want[id])
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not running: %v", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The plan is published after the jobs start.
	for _, id := range ids {
		for !strings.Contains(get(t, d.URL+"/api/v1/plan"), `"id":"`+id+`"`) {
			if time.Now().After(deadline) {
				t.Fatalf("job %s is not in the plan", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	gotWhole, gotMIG := false, false
	for _, n := range want {
		gotWhole = gotWhole || n == "gpu1"
		gotMIG = gotMIG || strings.HasPrefix(n, "gpu0/gi")
	}
	if !gotWhole || !gotMIG {
		t.Fatalf("the jobs run on %v: want one on a MIG instance of GPU 0 and one on GPU 1", want)
	}

	// mmkctl's tables: jobs, plan, gpus (the last reads the backend
	// itself, the configuration's fake GPUs: its own names).
	for _, args := range [][]string{{"jobs"}, {"plan"}} {
		out, err := mmkctl(t, append(args, "--addr", d.URL)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range want {
			if !strings.Contains(out, n) {
				t.Errorf("mmkctl %s does not name %s:\n%s", args[0], n, out)
			}
		}
		if strings.Contains(out, "7g.141gb") {
			t.Errorf("mmkctl %s gives the GPU without MIG a profile:\n%s", args[0], out)
		}
	}
	if out, err := mmkctl(t, "gpus", "--backend", "fake"); err != nil || !strings.Contains(out, "gpu0/gi1") {
		t.Errorf("mmkctl gpus does not name gpu0/gi1 (%v):\n%s", err, out)
	}

	// The plan, from mmkctl -o json and the API alike.
	planOut, err := mmkctl(t, "plan", "--addr", d.URL, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var cliPlan struct {
		Plan node.PlanView `json:"plan"`
	}
	if err := json.Unmarshal([]byte(planOut), &cliPlan); err != nil {
		t.Fatalf("mmkctl plan -o json: %v", err)
	}
	var apiPlan node.PlanView
	if err := json.Unmarshal([]byte(get(t, d.URL+"/api/v1/plan")), &apiPlan); err != nil {
		t.Fatalf("/api/v1/plan: %v", err)
	}
	for what, p := range map[string]node.PlanView{"mmkctl plan -o json": cliPlan.Plan, "/api/v1/plan": apiPlan} {
		for id, n := range want {
			found := false
			for _, g := range p.GPUs {
				for _, in := range g.Instances {
					for _, j := range in.Jobs {
						if j.ID == id {
							found = true
							if in.Name != n {
								t.Errorf("%s: job %s in instance %q, want %q", what, id, in.Name, n)
							}
						}
					}
					if !g.MIG && in.Profile != "" {
						t.Errorf("%s: GPU %d without MIG has the profile %q", what, g.Index, in.Profile)
					}
				}
			}
			if !found {
				t.Errorf("%s: job %s is in no instance", what, id)
			}
		}
	}
	// The job and the GPUs from the API.
	for id, n := range want {
		var j jobs.Job
		if err := json.Unmarshal([]byte(get(t, d.URL+"/api/v1/jobs/"+id)), &j); err != nil {
			t.Fatal(err)
		}
		if j.Placement.InstanceName != n {
			t.Errorf("/api/v1/jobs/%s: instanceName %q, want %q", id, j.Placement.InstanceName, n)
		}
	}
	var gpus []partitioner.GPUState
	if err := json.Unmarshal([]byte(get(t, d.URL+"/api/v1/gpus")), &gpus); err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		for _, in := range g.Instances {
			if w := names[in.UUID()]; in.Name != w {
				t.Errorf("/api/v1/gpus: GPU %d instance %d is named %q, want %q", g.Index, in.ID, in.Name, w)
			}
		}
	}
	// The DRA driver's devices: each instance's name in its "name"
	// attribute (the device's own name is its stable key: NVML may give
	// a GPU-instance id to another instance after a MIG change).
	drvPlan, err := (&dra.RESTClient{Base: d.URL}).Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, dev := range dra.Resources("node-1", drvPlan, 4096).Pools["node-1"].Slices[0].Devices {
		if a := dev.Attributes[dra.AttrName].StringValue; a != nil {
			devices = append(devices, *a)
		}
	}
	var wantDevices []string
	for _, g := range inv {
		if len(g.Instances) == 0 {
			wantDevices = append(wantDevices, "gpu"+strconv.Itoa(g.Index))
		}
		for _, in := range g.Instances {
			wantDevices = append(wantDevices, "gpu"+strconv.Itoa(g.Index)+"/gi"+strconv.Itoa(in.ID))
		}
	}
	slices.Sort(devices)
	slices.Sort(wantDevices)
	if !slices.Equal(devices, wantDevices) {
		t.Errorf("the DRA driver's devices are named %v, want %v (the name attribute)", devices, wantDevices)
	}
	// /metrics: the instance label.
	metrics := get(t, d.URL+"/metrics")
	for _, n := range want {
		if !strings.Contains(metrics, `instance="`+n+`"`) {
			t.Errorf("/metrics has no instance=%q:\n%s", n, grepLines(metrics, "mmk_instance_jobs"))
		}
	}
	// The latency controllers: /api/v1/slo and their /metrics label.
	var sloView node.SLOView
	if err := json.Unmarshal([]byte(get(t, d.URL+"/api/v1/slo")), &sloView); err != nil {
		t.Fatal(err)
	}
	var sloNames, wantNames []string
	for _, is := range sloView.Instances {
		sloNames = append(sloNames, is.Instance)
	}
	for _, n := range want {
		wantNames = append(wantNames, n)
		if !strings.Contains(metrics, `mmk_instance_slo_rung{instance="`+n+`",`) {
			t.Errorf("/metrics has no mmk_instance_slo_rung of instance %q:\n%s", n, grepLines(metrics, "mmk_instance_slo_rung"))
		}
	}
	slices.Sort(sloNames)
	slices.Sort(wantNames)
	if !slices.Equal(sloNames, wantNames) {
		t.Errorf("/api/v1/slo: controllers on %v, want %v", sloNames, wantNames)
	}
	// The API's document names the field on each answer that has it.
	var doc map[string]any
	if err := json.Unmarshal([]byte(get(t, d.URL+"/api/v1/openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, field := range [][]string{
		{"GPUState", "instances", "[]", "name"}, // /api/v1/gpus
		{"InstanceView", "name"},                // /api/v1/plan
		{"Placement", "instanceName"},           // a job's
		{"Scheduler", "name"},                   // /api/v1/kernelsched
		{"InstanceSLO", "instance"},             // /api/v1/slo
		{"JobSLO", "instance"},
	} {
		if !documented(doc, field) {
			t.Errorf("openapi.json: schema %s has no %s", field[0], strings.Join(field[1:], "."))
		}
	}
	// The dashboard's data: the stream's snapshot (its plan and jobs).
	snap := streamSnapshot(t, d.URL)
	for _, n := range want {
		for _, field := range []string{`"name":"` + n + `"`, `"instanceName":"` + n + `"`} {
			if !strings.Contains(snap, field) {
				t.Errorf("the dashboard's snapshot lacks %s", field)
			}
		}
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// documented reports whether openapi.json's schema path[0] has the
// property path[1:] ("[]" for an array's items), through $refs and allOf.
func documented(doc map[string]any, path []string) bool {
	var at any = map[string]any{"$ref": "#/components/schemas/" + path[0]}
	for _, step := range path[1:] {
		at = schemaStep(doc, at, step)
		if at == nil {
			return false
		}
	}
	return true
}

// schemaStep is the schema of a property (or "[]": the items) of schema.
func schemaStep(doc map[string]any, schema any, step string) any {
	m, _ := schema.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		var v any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			mm, _ := v.(map[string]any)
			v = mm[part]
		}
		return schemaStep(doc, v, step)
	}
	if step == "[]" {
		return m["items"]
	}
	if props, _ := m["properties"].(map[string]any); props[step] != nil {
		return props[step]
	}
	subs, _ := m["allOf"].([]any)
	for _, sub := range subs {
		if s := schemaStep(doc, sub, step); s != nil {
			return s
		}
	}
	return nil
}
