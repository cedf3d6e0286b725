package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/web/webtest"
)

// countingNode counts the jobs the server copies out of the node.
type countingNode struct {
	*webtest.FakeNode
	copied atomic.Int64
}

func (n *countingNode) Jobs(f node.JobFilter) ([]jobs.Job, error) {
	list, err := n.FakeNode.Jobs(f)
	n.copied.Add(int64(len(list)))
	return list, err
}

func (n *countingNode) JobsSince(since uint64, limit int) node.JobFeed {
	feed := n.FakeNode.JobsSince(since, limit)
	n.copied.Add(int64(len(feed.Jobs)))
	return feed
}

// TestStreamCostFollowsChanges: a stream's update copies the jobs that
// changed, not every job the node holds (with 3,000 jobs and 20 idle
// streams, copying all of them four times a second cut submissions
// fourfold).
func TestStreamCostFollowsChanges(t *testing.T) {
	cn := &countingNode{FakeNode: webtest.NewFakeNode(t.TempDir())}
	ts, srv := streamServer(t, 10*time.Millisecond, time.Hour, func(o *Options) { o.Node = cn })
	const n = 3000
	var last jobs.Job
	for i := range n {
		last = ts.submit(t, fmt.Sprintf(`{"name":"j%d","command":["true"]}`, i))
	}
	c := openStream(t, srv, "?jobs=10")
	c.next(t, "snapshot")
	cn.copied.Store(0)
	if err := cn.SetState(last.ID, jobs.Running, "started"); err != nil {
		t.Fatal(err)
	}
	m := decode[streamJobs](t, c.next(t, "jobs").data)
	if len(m.Jobs) != 1 || m.Total != n {
		t.Fatalf("update of %d jobs, total %d", len(m.Jobs), m.Total)
	}
	if got := cn.copied.Load(); got > 10 {
		t.Errorf("one change of one job copied %d jobs out of the node, want about 1", got)
	}
}

// TestStreamCap: past Options.MaxStreams live streams, one more is
// answered 503 with Retry-After; once one ends, another is served.
func TestStreamCap(t *testing.T) {
	_, srv := streamServer(t, 10*time.Millisecond, time.Hour, func(o *Options) { o.MaxStreams = 3 })
	var open []*sseClient
	for range 3 {
		c := openStream(t, srv, "")
		c.next(t, "snapshot")
		open = append(open, c)
	}
	resp, err := srv.Client().Get(srv.URL + "/api/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "at most 3 streams") {
		t.Fatalf("a fourth stream = %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	open[0].cancel()
	open[0].ended(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := srv.Client().Get(srv.URL + "/api/v1/stream")
		if err != nil {
			t.Fatal(err)
		}
		code := resp.StatusCode
		resp.Body.Close()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream served after one ended: %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListPages: /jobs without a limit answers DefaultListLimit jobs,
// newest first, and a Link to the next page; following the links reads
// every job once.
func TestListPages(t *testing.T) {
	ts := newTestServer(t)
	const n = DefaultListLimit + 50
	for i := range n {
		ts.submit(t, fmt.Sprintf(`{"name":"j%03d","command":["true"]}`, i))
	}
	r := ts.do(t, "GET", "/api/v1/jobs", "")
	first := decode[[]jobs.Job](t, r.body)
	if r.code != 200 || len(first) != DefaultListLimit || first[0].Spec.Name != fmt.Sprintf("j%03d", n-1) {
		t.Fatalf("first page: %d, %d jobs", r.code, len(first))
	}
	seen := map[string]bool{}
	path := "/api/v1/jobs?name=j"
	for pages := 0; path != ""; pages++ {
		if pages > 10 {
			t.Fatal("the links do not end")
		}
		r := ts.do(t, "GET", path, "")
		if r.code != 200 {
			t.Fatalf("GET %s = %d %s", path, r.code, r.body)
		}
		for _, j := range decode[[]jobs.Job](t, r.body) {
			if seen[j.ID] {
				t.Fatalf("job %s on two pages", j.ID)
			}
			seen[j.ID] = true
		}
		path = ""
		if link := r.header.Get("Link"); link != "" {
			path = strings.TrimPrefix(strings.SplitN(link, ">", 2)[0], "<")
			if !strings.Contains(path, "name=j") {
				t.Errorf("next page %s lost the filter", path)
			}
		}
	}
	if len(seen) != n {
		t.Errorf("the pages held %d jobs, want %d", len(seen), n)
	}
	for _, q := range []string{"?limit=5001", "?before=nope"} {
		if r := ts.do(t, "GET", "/api/v1/jobs"+q, ""); r.code != 400 {
			t.Errorf("GET /jobs%s = %d %s", q, r.code, r.body)
		}
	}
}

// TestConnCap: a listener under a cap of 4 accepts at most 4
// connections at once (trusted ones: the token holder's); the fifth
// client is accepted once one closes.
func TestConnCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp := NewConnCap(4)
	capped := cp.Wrap(ln)
	defer capped.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := capped.Accept()
			if err != nil {
				close(accepted)
				return
			}
			Trust(ConnContext(context.Background(), c))
			accepted <- c
		}
	}()
	for range 6 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	var served []net.Conn
	for len(served) < 4 {
		select {
		case c := <-accepted:
			served = append(served, c)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d connections accepted, want 4", len(served))
		}
	}
	select {
	case <-accepted:
		t.Fatal("a fifth connection was accepted while four were open")
	case <-time.After(100 * time.Millisecond):
	}
	if cp.Open() != 4 {
		t.Errorf("Open %d, want 4", cp.Open())
	}
	served[0].Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
	for _, c := range served[1:] {
		c.Close()
	}
}

// TestConnLimitReservesDescriptors: the cap leaves ReservedFDs
// descriptors under the process's limit.
func TestConnLimitReservesDescriptors(t *testing.T) {
	n, err := ConnLimit(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	var lim unix.Rlimit
	getNofile(t, &lim)
	if want := int(lim.Cur) - ReservedFDs; n != max(want, minConns) {
		t.Errorf("ConnLimit = %d with a descriptor limit of %d, want %d", n, lim.Cur, want)
	}
	if n, _ := ConnLimit(0); n > DefaultMaxConns {
		t.Errorf("default cap %d above %d", n, DefaultMaxConns)
	}
}

// TestServerTimeouts: the server drops a client that sends no request
// within ReadHeaderTimeout and an idle kept-alive one after IdleTimeout:
// the timeouts are set.
func TestServerTimeouts(t *testing.T) {
	srv := NewHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.ConnContext == nil {
		t.Fatalf("server %+v lacks timeouts or the peer context", srv)
	}
	srv.ReadHeaderTimeout, srv.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("a silent client was not dropped: %v", err)
	}
}

func getNofile(t *testing.T, lim *unix.Rlimit) {
	t.Helper()
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, lim); err != nil {
		t.Fatal(err)
	}
}
