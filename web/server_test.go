package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
)

// newServer returns a server of the GPU inventory alone (no node).
func newServer(t *testing.T) *Server {
	t.Helper()
	return New(Options{Backend: fakeBackend(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestRoutes(t *testing.T) {
	h := newServer(t).Handler()
	tests := []struct {
		path     string
		status   int
		contains string
	}{
		{"/healthz", 200, `"status":"ok"`},
		{"/readyz", 200, `"backend":"fake"`},
		{"/api/v1/gpus", 200, `"layout":"3g.40gb@0+3g.40gb@4"`},
		{"/api/v1/nope", 404, `"error":"no route GET /api/v1/nope"`},
	}
	for _, tt := range tests {
		code, body := get(t, h, tt.path)
		if code != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("GET %s = %d %s, want %d containing %s", tt.path, code, body, tt.status, tt.contains)
		}
	}
}

func TestGPUsJSON(t *testing.T) {
	_, body := get(t, newServer(t).Handler(), "/api/v1/gpus")
	var gpus []partitioner.GPUState
	if err := json.Unmarshal([]byte(body), &gpus); err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || len(gpus[0].Instances) != 2 || gpus[0].Instances[1].SMs != 60 || gpus[1].MIG.Current || gpus[1].Instances == nil {
		t.Errorf("inventory %s", body)
	}
}

// broken is a backend whose GPUs cannot be read.
type broken struct{ partitioner.Backend }

func (broken) GPUs() ([]partitioner.GPU, error) { return nil, errors.New("driver gone") }
func (broken) Name() string                     { return "broken" }

func TestNotReadyWhenBackendFails(t *testing.T) {
	s := New(Options{Backend: broken{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if code, body := get(t, s.Handler(), "/readyz"); code != 503 || !strings.Contains(body, "driver gone") {
		t.Errorf("readyz = %d %s", code, body)
	}
	if code, _ := get(t, s.Handler(), "/api/v1/gpus"); code != 500 {
		t.Errorf("gpus on a broken backend = %d", code)
	}
}

func TestReadyzAsksTheNode(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.do(t, "GET", "/readyz", ""); r.code != 200 || !strings.Contains(r.body, `"backend":"fake"`) {
		t.Errorf("readyz = %d %s", r.code, r.body)
	}
	ts.node.SetReady(errors.New("recovering jobs"))
	if r := ts.do(t, "GET", "/readyz", ""); r.code != 503 || !strings.Contains(r.body, "node: recovering jobs") {
		t.Errorf("readyz of a node not ready = %d %s", r.code, r.body)
	}
	if r := ts.do(t, "GET", "/healthz", ""); r.code != 200 {
		t.Errorf("healthz of a node not ready = %d %s", r.code, r.body)
	}
}

// TestWithoutNode checks that a server without a node answers the job
// routes with 503 and still serves the GPUs.
func TestWithoutNode(t *testing.T) {
	h := newServer(t).Handler()
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/0123456789abcdef", "/api/v1/plan", "/api/v1/instances", "/api/v1/reconfigs", "/api/v1/kernelsched"} {
		if code, body := get(t, h, path); code != 503 || !strings.Contains(body, `"error":"jobs are not served"`) {
			t.Errorf("GET %s without a node = %d %s", path, code, body)
		}
	}
	if code, _ := get(t, h, "/api/v1/gpus"); code != 200 {
		t.Errorf("gpus without a node = %d", code)
	}
	if code, body := get(t, h, "/metrics"); code != 200 || strings.Contains(body, "mmk_jobs") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("metrics without a node = %d %s", code, body)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "DELETE", "/api/v1/jobs", "")
	if r.code != 405 || r.header.Get("Allow") != "POST, GET" && r.header.Get("Allow") != "GET, POST" {
		t.Errorf("DELETE /api/v1/jobs = %d %s (Allow %q)", r.code, r.body, r.header.Get("Allow"))
	}
	if e := r.apiErr(t); !strings.Contains(e.Message, "not allowed") {
		t.Errorf("405 body %s", r.body)
	}
}

// TestNodeFailureIs500 checks that an error the node does not classify is
// a 500 whose message is logged.
func TestNodeFailureIs500(t *testing.T) {
	ts := newTestServer(t)
	j := ts.submit(t, `{"command":["true"]}`)
	ts.node.Fail(errors.New("store: disk gone"))
	for _, tt := range []struct{ method, path, body string }{
		{"GET", "/api/v1/jobs", ""},
		{"GET", "/api/v1/jobs/" + j.ID, ""},
		{"GET", "/api/v1/jobs/" + j.ID + "/events", ""},
		{"POST", "/api/v1/jobs/" + j.ID + "/cancel", ""},
		{"POST", "/api/v1/jobs", `{"command":["true"]}`},
		{"GET", "/api/v1/jobs/" + j.ID + "/logs", ""},
		{"GET", "/api/v1/reconfigs", ""},
	} {
		r := ts.do(t, tt.method, tt.path, tt.body)
		if r.code != 500 || !strings.Contains(r.apiErr(t).Message, "disk gone") {
			t.Errorf("%s %s on a failing node = %d %s", tt.method, tt.path, r.code, r.body)
		}
	}
	if !strings.Contains(ts.log.String(), "disk gone") {
		t.Errorf("500s not logged:\n%s", ts.log.String())
	}
}

// TestNodeNotReadyIs503 checks that a node still recovering answers 503,
// not 500.
func TestNodeNotReadyIs503(t *testing.T) {
	ts := newTestServer(t)
	ts.node.Fail(fmt.Errorf("cancel job x: %w", node.ErrNotReady))
	if r := ts.do(t, "GET", "/api/v1/jobs", ""); r.code != 503 || !strings.Contains(r.body, "node is not ready") {
		t.Errorf("jobs of a node not ready = %d %s", r.code, r.body)
	}
}
