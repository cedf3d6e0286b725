package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

func TestSubmit(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		header []string
		status int
		field  string // of a 4xx
		check  func(t *testing.T, j jobs.Job)
	}{
		{"minimal, offline by default", `{"command":["python3","train.py"]}`, nil, 201, "", func(t *testing.T, j jobs.Job) {
			if j.State != jobs.Pending || j.Spec.Kind != jobs.Offline || j.Priority != 5 || j.MemoryMiB != 4096 || j.Spec.Name != "python3" {
				t.Errorf("job %+v", j)
			}
		}},
		{"full spec", `{"name":"bert","command":["python3","serve.py"],"env":{"A":"1"},"workdir":"/tmp","type":"online",
			"priority":1,"memoryMiB":8192,"workload":{"model":"bert","batch":8,"mode":"infer"},"taskKey":"bert_infer"}`, nil, 201, "",
			func(t *testing.T, j jobs.Job) {
				if j.Spec.Kind != jobs.Online || j.Priority != 1 || j.MemoryMiB != 8192 || j.TaskKey != "bert_infer" || j.Spec.Env["A"] != "1" {
					t.Errorf("job %+v", j)
				}
			}},
		{"latency target", `{"command":["x"],"type":"online","slo":"p99=25ms"}`, nil, 201, "", func(t *testing.T, j jobs.Job) {
			if j.Spec.SLO != "p99=25ms" {
				t.Errorf("slo %q", j.Spec.SLO)
			}
		}},
		{"memory with a unit", `{"command":["x"],"memory":"8GiB"}`, nil, 201, "", func(t *testing.T, j jobs.Job) {
			if j.MemoryMiB != 8192 {
				t.Errorf("memory %d MiB, want 8192", j.MemoryMiB)
			}
		}},
		{"memory and memoryMiB", `{"command":["x"],"memory":"8GiB","memoryMiB":8192}`, nil, 400, "memory", nil},
		{"bad memory", `{"command":["x"],"memory":"lots"}`, nil, 400, "memory", nil},
		{"memory too large", `{"command":["x"],"memory":"9TiB"}`, nil, 400, "memory", nil},
		{"negative memoryMiB", `{"command":["x"],"memoryMiB":-1}`, nil, 400, "memoryMiB", nil},
		{"no command", `{"name":"x"}`, nil, 400, "command", nil},
		{"empty program", `{"command":[""]}`, nil, 400, "command[0]", nil},
		{"command as a string", `{"command":"python3 train.py"}`, nil, 400, "command", nil},
		{"priority out of range", `{"command":["x"],"priority":12}`, nil, 400, "priority", nil},
		{"priority as text", `{"command":["x"],"priority":"high"}`, nil, 400, "priority", nil},
		{"bad type", `{"command":["x"],"type":"batch"}`, nil, 400, "type", nil},
		{"reserved env", `{"command":["x"],"env":{"CUDA_VISIBLE_DEVICES":"0"}}`, nil, 400, "env.CUDA_VISIBLE_DEVICES", nil},
		{"relative workdir", `{"command":["x"],"workdir":"runs"}`, nil, 400, "workdir", nil},
		{"missing workdir", `{"command":["x"],"workdir":"/nonexistent/mmk-workdir"}`, nil, 400, "workdir", nil},
		{"workdir a file", `{"command":["x"],"workdir":"/proc/self/status"}`, nil, 400, "workdir", nil},
		{"workdir kept", `{"command":["x"],"workdir":"/tmp"}`, nil, 201, "", func(t *testing.T, j jobs.Job) {
			if j.Spec.WorkDir != "/tmp" {
				t.Errorf("workdir %q, want /tmp", j.Spec.WorkDir)
			}
		}},
		{"bad workload mode", `{"command":["x"],"workload":{"model":"resnet50","mode":"eval"}}`, nil, 400, "workload.mode", nil},
		{"batch of wrong type", `{"command":["x"],"workload":{"model":"resnet50","mode":"train","batch":1.5}}`, nil, 400, "workload.batch", nil},
		{"unknown field", `{"command":["x"],"gpus":2}`, nil, 400, "gpus", nil},
		{"slo without unit", `{"command":["x"],"type":"online","slo":"p99=25"}`, nil, 400, "slo", nil},
		{"slo zero", `{"command":["x"],"type":"online","slo":"p99=0ms"}`, nil, 400, "slo", nil},
		{"slo negative", `{"command":["x"],"type":"online","slo":"p99=-1ms"}`, nil, 400, "slo", nil},
		{"slo percentile", `{"command":["x"],"type":"online","slo":"p101=5ms"}`, nil, 400, "slo", nil},
		{"slo offline", `{"command":["x"],"slo":"p99=5ms"}`, nil, 400, "slo", nil},
		{"unknown nested field", `{"command":["x"],"workload":{"model":"m","mode":"train","epochs":3}}`, nil, 400, "epochs", nil},
		{"not JSON", `command=python3`, nil, 400, "", nil},
		{"truncated JSON", `{"command":["x"`, nil, 400, "", nil},
		{"an array", `[{"command":["x"]}]`, nil, 400, "", nil},
		{"two objects", `{"command":["x"]}{"command":["y"]}`, nil, 400, "", nil},
		{"null", `null`, nil, 400, "command", nil},
		{"empty body", ``, nil, 400, "", nil},
		{"form content type", `{"command":["x"]}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "Content-Type", nil},
		{"text content type", `{"command":["x"]}`, []string{"Content-Type", "text/plain"}, 415, "Content-Type", nil},
		{"JSON with charset", `{"command":["x"]}`, []string{"Content-Type", "application/json; charset=utf-8"}, 201, "", nil},
		{"idempotency key too long", `{"command":["x"]}`, []string{"Idempotency-Key", strings.Repeat("k", 129)}, 400, "Idempotency-Key", nil},
		{"idempotency key not printable", `{"command":["x"]}`, []string{"Idempotency-Key", "k\x01"}, 400, "Idempotency-Key", nil},
		{"unknown query parameter", `{"command":["x"]}`, nil, 400, "dry", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			path := "/api/v1/jobs"
			if tt.field == "dry" {
				path += "?dry=1"
			}
			var r response
			if tt.body == "" {
				r = ts.do(t, "POST", path, "", tt.header...)
			} else {
				r = ts.do(t, "POST", path, tt.body, tt.header...)
			}
			if r.code != tt.status {
				t.Fatalf("status %d %s, want %d", r.code, r.body, tt.status)
			}
			if tt.status >= 400 {
				e := r.apiErr(t)
				if e.Field != tt.field || e.Message == "" {
					t.Errorf("error %s: field %q, want %q", r.body, e.Field, tt.field)
				}
				if list, _ := ts.node.Jobs(nodeFilterAll); len(list) != 0 {
					t.Errorf("a refused submission stored %d jobs", len(list))
				}
				return
			}
			j := decode[jobs.Job](t, r.body)
			if !jobs.ValidID(j.ID) || r.header.Get("Location") != "/api/v1/jobs/"+j.ID {
				t.Errorf("id %q, Location %q", j.ID, r.header.Get("Location"))
			}
			if tt.check != nil {
				tt.check(t, j)
			}
		})
	}
}

// TestSubmitReasonsNameTheValue checks that a 400 says why, not only
// where.
func TestSubmitReasonsNameTheValue(t *testing.T) {
	ts := newTestServer(t)
	for body, want := range map[string]string{
		`{"command":["x"],"priority":12}`:                  "must be 0 (highest) to 9",
		`{"command":["x"],"gpus":2}`:                       `unknown field "gpus"`,
		`{"command":"python3"}`:                            "command: must be an array, not string",
		`{"command":["x"],"memory":"lots"}`:                `memory size "lots"`,
		`{"command":["x"]`:                                 "not JSON",
		`{"command":["x"],"type":"batch"}`:                 "must be online or offline",
		`{"command":["x"],"memoryMiB":"8GiB"}`:             "memoryMiB: must be an integer, not string",
		`{"command":["x"],"type":"online","slo":"p99=25"}`: `the bound "25" has no unit`,
		`{"command":["x"],"type":"online","slo":"p99=0s"}`: `the bound 0s must be positive (got "p99=0s")`,
		`{"command":["x"],"type":"online","slo":"p0=5ms"}`: `unknown percentile "p0"`,
		`{"command":["x"],"workdir":"/nonexistent/w"}`:     `workdir: no such directory (got "/nonexistent/w")`,
		`{"command":["x"],"workdir":"/proc/self/status"}`:  `workdir: is not a directory (got "/proc/self/status")`,
	} {
		if e := ts.do(t, "POST", "/api/v1/jobs", body).apiErr(t); !strings.Contains(e.Message, want) {
			t.Errorf("%s: error %q lacks %q", body, e.Message, want)
		}
	}
}

func TestSubmitIdempotency(t *testing.T) {
	ts := newTestServer(t)
	body := `{"command":["python3","train.py"]}`
	first := ts.do(t, "POST", "/api/v1/jobs", body, "Idempotency-Key", "run-42")
	again := ts.do(t, "POST", "/api/v1/jobs", body, "Idempotency-Key", "run-42")
	other := ts.do(t, "POST", "/api/v1/jobs", body, "Idempotency-Key", "run-43")
	plain := ts.do(t, "POST", "/api/v1/jobs", body)
	if first.code != 201 || again.code != 200 || other.code != 201 || plain.code != 201 {
		t.Fatalf("statuses %d %d %d %d, want 201 200 201 201", first.code, again.code, other.code, plain.code)
	}
	a, b, c := decode[jobs.Job](t, first.body), decode[jobs.Job](t, again.body), decode[jobs.Job](t, other.body)
	if a.ID != b.ID || a.ID == c.ID || again.header.Get("Location") != "/api/v1/jobs/"+a.ID {
		t.Errorf("ids %s %s %s, repeat Location %q", a.ID, b.ID, c.ID, again.header.Get("Location"))
	}
	if list, _ := ts.node.Jobs(nodeFilterAll); len(list) != 3 {
		t.Errorf("%d jobs stored, want 3", len(list))
	}
	// The key again with another request: a conflict naming the header.
	clash := ts.do(t, "POST", "/api/v1/jobs", `{"command":["python3","eval.py"]}`, "Idempotency-Key", "run-42")
	if clash.code != 409 || !strings.Contains(clash.body, `"field":"Idempotency-Key"`) {
		t.Errorf("key reused for another job = %d %s, want 409 naming Idempotency-Key", clash.code, clash.body)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 256 })
	big := fmt.Sprintf(`{"command":["x"],"name":%q}`, strings.Repeat("n", 300))
	if r := ts.do(t, "POST", "/api/v1/jobs", big); r.code != 413 || !strings.Contains(r.body, "larger than 256 bytes") {
		t.Errorf("declared length over the limit = %d %s", r.code, r.body)
	}
	// Without a declared length (chunked), the read fails at the limit.
	req := localRequest("POST", "/api/v1/jobs", strings.NewReader(big))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, req)
	if rec.Code != 413 {
		t.Errorf("undeclared length over the limit = %d %s", rec.Code, rec.Body)
	}
	if r := ts.do(t, "POST", "/api/v1/jobs", `{"command":["x"]}`); r.code != 201 {
		t.Errorf("small body = %d %s", r.code, r.body)
	}
	if def := newTestServer(t); def.maxBody != DefaultMaxBodyBytes {
		t.Errorf("default limit %d", def.maxBody)
	}
}

func TestListJobs(t *testing.T) {
	ts := newTestServer(t)
	a := ts.submit(t, `{"name":"infer-a","command":["x"],"type":"online"}`)
	b := ts.submit(t, `{"name":"train-b","command":["x"]}`)
	c := ts.submit(t, `{"name":"train-c","command":["x"]}`)
	d := ts.submit(t, `{"name":"infer-d","command":["x"],"type":"online"}`)
	must(t, ts.node.SetState(a.ID, jobs.Running, ""))
	must(t, ts.node.SetState(b.ID, jobs.Running, ""))
	must(t, ts.node.SetState(c.ID, jobs.Succeeded, ""))
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{d.ID, c.ID, b.ID, a.ID}},
		{"?state=running", []string{b.ID, a.ID}},
		{"?state=running,pending", []string{d.ID, b.ID, a.ID}},
		{"?state=succeeded&type=offline", []string{c.ID}},
		{"?type=online", []string{d.ID, a.ID}},
		{"?name=train", []string{c.ID, b.ID}},
		{"?limit=2", []string{d.ID, c.ID}},
		{"?state=failed", []string{}},
		{"?state=running&type=online&name=infer&limit=1", []string{a.ID}},
	}
	for _, tt := range tests {
		r := ts.do(t, "GET", "/api/v1/jobs"+tt.query, "")
		if r.code != 200 {
			t.Errorf("%s: %d %s", tt.query, r.code, r.body)
			continue
		}
		var got []string
		for _, j := range decode[[]jobs.Job](t, r.body) {
			got = append(got, j.ID)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: %v, want %v", tt.query, got, tt.want)
		}
		if len(tt.want) == 0 && strings.TrimSpace(r.body) != "[]" {
			t.Errorf("%s: empty list is %s, want []", tt.query, r.body)
		}
	}
}

func TestListJobsBadQuery(t *testing.T) {
	ts := newTestServer(t)
	for query, field := range map[string]string{
		"?state=done":        "state",
		"?state=running,":    "state",
		"?type=batch":        "type",
		"?limit=0":           "limit",
		"?limit=-3":          "limit",
		"?limit=ten":         "limit",
		"?limit=99999999999": "limit",
		"?sate=running":      "sate",
		"?state=a&state=b":   "state",
		"?name=" + "%ff%fe":  "name",
		"?name=%zz":          "",
	} {
		r := ts.do(t, "GET", "/api/v1/jobs"+query, "")
		if r.code != 400 || r.apiErr(t).Field != field {
			t.Errorf("%s = %d %s, want 400 naming %q", query, r.code, r.body, field)
		}
	}
}

func TestGetJobAndEvents(t *testing.T) {
	ts := newTestServer(t)
	j := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(j.ID, jobs.Placed, "GPU 0"))
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/api/v1/jobs/" + j.ID, 200, `"state":"placed"`},
		{"/api/v1/jobs/" + j.ID + "/events", 200, `"from":"pending","to":"placed","reason":"GPU 0"`},
		{"/api/v1/jobs/0000000000000000", 404, "no such job"},
		{"/api/v1/jobs/0000000000000000/events", 404, "no such job"},
		{"/api/v1/jobs/not-an-id", 400, `"field":"id"`},
		{"/api/v1/jobs/0000000000000000/logs", 404, "no such job"},
		{"/api/v1/jobs/ILOU000000000000/events", 400, `"field":"id"`},
		{"/api/v1/jobs/" + j.ID + "?verbose=1", 400, `"field":"verbose"`},
	}
	for _, tt := range tests {
		r := ts.do(t, "GET", tt.path, "")
		if r.code != tt.status || !strings.Contains(r.body, tt.want) {
			t.Errorf("GET %s = %d %s, want %d with %s", tt.path, r.code, r.body, tt.status, tt.want)
		}
	}
	events := decode[[]jobs.Event](t, ts.do(t, "GET", "/api/v1/jobs/"+j.ID+"/events", "").body)
	if len(events) != 2 || events[0].To != jobs.Pending || events[1].To != jobs.Placed {
		t.Errorf("events %+v", events)
	}
}

func TestCancel(t *testing.T) {
	ts := newTestServer(t)
	running := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(running.ID, jobs.Running, ""))
	pending := ts.submit(t, `{"command":["x"]}`)
	done := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(done.ID, jobs.Succeeded, ""))
	claim, _, err := ts.node.Submit(context.Background(), jobs.Spec{Name: "pod", Kind: jobs.Offline,
		Claim: &jobs.Claim{Namespace: "ml", Name: "c", UID: "u-1", Instance: "gpu0"}}, "", nil)
	must(t, err)
	tests := []struct {
		name, id, body string
		status         int
		want           string
	}{
		{"running, with a reason", running.ID, `{"reason":"wrong data set"}`, 200, `"reason":"wrong data set"`},
		{"pending, without a body", pending.ID, ``, 200, `"state":"cancelled"`},
		{"cancelled already", running.ID, ``, 409, "cannot go from cancelled to cancelled"},
		{"finished", done.ID, `{}`, 409, "cannot go from succeeded to cancelled"},
		{"a claim job", claim.ID, ``, 409, "a claim job ends when Kubernetes unprepares its claim"},
		{"unknown", "0000000000000000", ``, 404, "no such job"},
		{"malformed id", "x", ``, 400, `"field":"id"`},
		{"unknown body field", done.ID, `{"force":true}`, 400, `"field":"force"`},
		{"reason not text", done.ID, `{"reason":"a\u0000b"}`, 400, `"field":"reason"`},
		{"body not JSON", done.ID, `please`, 400, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(t, "POST", "/api/v1/jobs/"+tt.id+"/cancel", tt.body)
			if r.code != tt.status || !strings.Contains(r.body, tt.want) {
				t.Errorf("cancel = %d %s, want %d with %s", r.code, r.body, tt.status, tt.want)
			}
		})
	}
	if r := ts.do(t, "GET", "/api/v1/jobs/"+pending.ID, ""); !strings.Contains(r.body, `"reason":"requested through the API"`) {
		t.Errorf("cancel without a reason: %s", r.body)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
