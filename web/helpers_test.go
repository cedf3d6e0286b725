package web

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
	"github.com/mmkgpu/mmk/web/webtest"
)

// The real node and the fake both serve the API.
var (
	_ Node = (*node.Node)(nil)
	_ Node = (*webtest.FakeNode)(nil)
)

// nodeFilterAll selects every job.
var nodeFilterAll = node.JobFilter{}

// testServer is a server over the fake node and fake GPUs, with its log
// kept for assertions.
type testServer struct {
	*Server
	node *webtest.FakeNode
	log  *syncBuffer
	dir  string
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func fakeBackend(t testing.TB) *nvmlbackend.Backend {
	t.Helper()
	b, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeGPUs: []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4"},
		{Model: "H200-141GB"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newTestServer returns a server with the fake node; edit changes its
// options first.
func newTestServer(t testing.TB, edit ...func(*Options)) *testServer {
	t.Helper()
	dir := t.TempDir()
	ts := &testServer{node: webtest.NewFakeNode(dir), log: &syncBuffer{}, dir: dir}
	opts := Options{Backend: fakeBackend(t), Node: ts.node, Log: slog.New(slog.NewTextHandler(ts.log, nil))}
	for _, e := range edit {
		e(&opts)
	}
	ts.Server = New(opts)
	ts.logPoll = 2 * time.Millisecond
	return ts
}

// response is what a request got.
type response struct {
	code   int
	body   string
	header http.Header
}

// apiErr decodes an error body.
func (r response) apiErr(t testing.TB) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e
}

// do sends a request; a body is sent as JSON unless header (name, value
// pairs) sets a Content-Type.
func (ts *testServer) do(t testing.TB, method, path, body string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := localRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, req)
	return response{rec.Code, rec.Body.String(), rec.Header()}
}

// submit creates a job through the API and returns it.
func (ts *testServer) submit(t testing.TB, body string) jobs.Job {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/api/v1/jobs", body)
	if r.code != http.StatusCreated {
		t.Fatalf("submit %s = %d %s", body, r.code, r.body)
	}
	var j jobs.Job
	if err := json.Unmarshal([]byte(r.body), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

func decode[T any](t testing.TB, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// localRequest is httptest.NewRequest as a client of the daemon on
// loopback sends it (httptest's default Host, example.com, is a name the
// server does not answer to).
func localRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:7070"
	return req
}
