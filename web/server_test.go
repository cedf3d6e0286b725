package web

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
)

func newServer(t *testing.T) *Server {
	t.Helper()
	b, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeGPUs: []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4"},
		{Model: "H200-141GB"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return New(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
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
	s := New(broken{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if code, body := get(t, s.Handler(), "/readyz"); code != 503 || !strings.Contains(body, "driver gone") {
		t.Errorf("readyz = %d %s", code, body)
	}
	if code, _ := get(t, s.Handler(), "/api/v1/gpus"); code != 500 {
		t.Errorf("gpus on a broken backend = %d", code)
	}
}
