package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

// FuzzSubmit sends arbitrary bodies and Idempotency-Key headers to POST
// /api/v1/jobs: the answer is never a panic or a 5xx, a 4xx always says
// why, and a 2xx holds a valid job.
func FuzzSubmit(f *testing.F) {
	for _, seed := range []struct{ body, key string }{
		{`{"command":["python3","train.py"]}`, ""},
		{`{"command":["x"],"type":"online","priority":0,"memory":"8GiB"}`, "k1"},
		{`{"name":"n","command":["a","b"],"env":{"A":"1"},"workdir":"/w","memoryMiB":1024,"workload":{"model":"resnet50","batch":32,"mode":"train"},"taskKey":"t"}`, "k2"},
		{`{"command":["x"],"memory":"1e300TiB"}`, ""},
		{`{"command":["x"],"memoryMiB":-1}`, ""},
		{`{"command":["x"],"priority":1e99}`, ""},
		{`{"command":[null]}`, ""},
		{`{"env":{"":""},"command":["\u0000"]}`, ""},
		{`{"workload":null,"command":["x"]}`, "\x7f"},
		{`[]`, ""},
		{`null`, ""},
		{`"x"`, ""},
		{`{"command":["x"]} trailing`, ""},
		{`{`, ""},
		{``, ""},
		{"\xff\xfe", ""},
	} {
		f.Add([]byte(seed.body), seed.key)
	}
	ts := newTestServer(f, func(o *Options) { o.MaxBodyBytes = 4096 })
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := localRequest("POST", "/api/v1/jobs", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header["Idempotency-Key"] = []string{key}
		}
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, req)
		switch {
		case rec.Code >= 500:
			t.Fatalf("body %q key %q: %d %s", body, key, rec.Code, rec.Body)
		case rec.Code >= 400:
			if e := decode[apiError](t, rec.Body.String()); e.Message == "" {
				t.Fatalf("body %q: %d without a message: %s", body, rec.Code, rec.Body)
			}
		default:
			if j := decode[jobs.Job](t, rec.Body.String()); !jobs.ValidID(j.ID) || j.Spec.Validate() != nil {
				t.Fatalf("body %q: accepted an invalid job %s", body, rec.Body)
			}
		}
	})
}

// FuzzListQuery sends arbitrary query strings to the routes that take
// one: never a panic or a 5xx.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{
		"", "state=running,pending&type=online&name=sub&limit=10", "state=", "state=,", "limit=-1",
		"limit=99999999999999999999", "type=x", "name=%ff", "%zz", "a=1&a=2", "tail=5&follow=1", ";", "state=running;type=online",
	} {
		f.Add(seed)
	}
	ts := newTestServer(f)
	j, _, err := ts.node.Submit(f.Context(), jobs.Spec{Command: []string{"x"}, Kind: jobs.Offline}, "", nil)
	if err != nil {
		f.Fatal(err)
	}
	must(f, ts.node.SetState(j.ID, jobs.Succeeded, ""))
	paths := []string{"/api/v1/jobs", "/api/v1/reconfigs", "/api/v1/jobs/" + j.ID, "/api/v1/jobs/" + j.ID + "/logs", "/api/v1/plan"}
	f.Fuzz(func(t *testing.T, query string) {
		for _, p := range paths {
			req := localRequest("GET", p, nil)
			req.URL.RawQuery = query
			rec := httptest.NewRecorder()
			ts.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("GET %s?%s: %d %s", p, query, rec.Code, rec.Body)
			}
		}
	})
}
