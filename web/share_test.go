package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// uidListener is a Unix socket listener whose connections carry the
// peer the test names (the test's connections all come from one
// process, of one uid): a seam for PeerListener.
type uidListener struct {
	net.Listener
	uid *atomic.Int32
}

func (l uidListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c, peer: Peer{PID: 1, UID: int(l.uid.Load()), GID: int(l.uid.Load())}}, nil
}

// serveCapped serves ts under a cap of n connections on ln.
func serveCapped(t *testing.T, ts *testServer, n int, ln net.Listener) *ConnCap {
	t.Helper()
	cp := NewConnCap(n)
	srv := NewHTTPServer(ts.Handler())
	go func() { _ = srv.Serve(cp.Wrap(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return cp
}

// holdIdle opens n connections to network addr and says nothing on them.
func holdIdle(t *testing.T, network, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// TestOneUserCannotHoldTheSocket (issue 38, row 7): a user of the Unix
// socket holding more idle connections than the socket's cap does not
// keep another user's request out: a user holds at most a quarter of
// the socket's slots, and a connection beyond its first only while more
// than a quarter stay free. Before, the other user's request waited in
// the backlog until the idle connections timed out (10 s; with 70 of
// them against mmkd's 64, it timed out).
func TestOneUserCannotHoldTheSocket(t *testing.T) {
	tests := []struct{ slots, idle int }{{8, 10}, {64, 70}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d slots, %d idle", tt.slots, tt.idle), func(t *testing.T) {
			ts := newTestServer(t)
			sock := filepath.Join(t.TempDir(), "mmkd.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var uid atomic.Int32
			uid.Store(1000)
			cp := serveCapped(t, ts, tt.slots, uidListener{ln, &uid})
			holdIdle(t, "unix", sock, tt.idle)
			waitUntil(t, func() bool { return cp.Open() > 0 })
			time.Sleep(50 * time.Millisecond) // the accept loop takes what it may
			uid.Store(1001)
			c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}}}
			resp, err := c.Get("http://mmkd/api/v1/jobs")
			if err != nil {
				t.Fatalf("another user's request while uid 1000 holds %d idle connections (cap %d): %v", tt.idle, tt.slots, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("another user's request: %s", resp.Status)
			}
			// uid 1000's share, and the other's connection, kept alive.
			if open := cp.Open(); open > tt.slots/4+1 {
				t.Errorf("%d connections open: uid 1000 holds more than its share %d", open, tt.slots/4)
			}
		})
	}
}

// TestIdleTCPCannotKeepTheTokenOut (issue 38, row 7): a local process
// holding idle TCP connections (no token needed to connect, and none for
// /healthz) does not keep a token holder's request out: connections
// that have not shown the token hold at most a quarter of the TCP slots,
// the oldest closed for a newer one. Before, the token holder's request
// waited in the backlog until the idle connections timed out.
func TestIdleTCPCannotKeepTheTokenOut(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	ts := newTestServer(t, func(o *Options) { o.Token = token })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp := serveCapped(t, ts, 8, ln)
	// A /healthz on a kept-alive connection is served without a token.
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	holdIdle(t, "tcp", ln.Addr().String(), 20)
	waitUntil(t, func() bool { return cp.Open() > 0 })
	time.Sleep(50 * time.Millisecond)
	req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/v1/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("the token holder's request while 20 idle connections wait (cap 8): %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the token holder's request: %s", resp.Status)
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5 s")
}
