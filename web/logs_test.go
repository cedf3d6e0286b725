package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// writeLog writes a job's log files: older is PATH.1 ("" for none),
// current PATH ("" for none).
func writeLog(t *testing.T, ts *testServer, id, older, current string) string {
	t.Helper()
	path, err := ts.node.LogPath(id)
	must(t, err)
	if older != "" {
		must(t, os.WriteFile(path+".1", []byte(older), 0o600))
	}
	if current != "" {
		must(t, os.WriteFile(path, []byte(current), 0o600))
	}
	return path
}

func TestLogs(t *testing.T) {
	tests := []struct {
		name, older, current, query string
		status                      int
		want                        string
	}{
		{"whole log", "", "line 1\nline 2\n", "", 200, "line 1\nline 2\n"},
		{"rotated part first", "old 1\nold 2\n", "new 1\n", "", 200, "old 1\nold 2\nnew 1\n"},
		{"tail within the file", "old\n", "line 1\nline 2\n", "?tail=7", 200, "line 2\n"},
		{"tail across the rotation", "old 1\nold 2\n", "new 1\n", "?tail=12", 200, "old 2\nnew 1\n"},
		{"tail beyond everything", "old\n", "new\n", "?tail=1000", 200, "old\nnew\n"},
		{"tail of nothing", "old\n", "new\n", "?tail=0", 200, ""},
		{"tail of the rotated part only", "old 1\nold 2\n", "", "?tail=6", 200, "old 2\n"},
		{"last lines", "old\n", "line 1\nline 2\nline 3\n", "?lines=2", 200, "line 2\nline 3\n"},
		{"last line without its newline", "", "line 1\nline 2\npart", "?lines=2", 200, "line 2\npart"},
		{"lines across the rotation", "old 1\nold 2\n", "new 1\n", "?lines=2", 200, "old 2\nnew 1\n"},
		{"more lines than kept", "old\n", "new\n", "?lines=10", 200, "old\nnew\n"},
		{"no lines", "old\n", "new\n", "?lines=0", 200, ""},
		{"lines and tail", "", "a\n", "?lines=1&tail=1", 400, `"field":"lines"`},
		{"bad lines", "", "a\n", "?lines=-2", 400, `"field":"lines"`},
		{"no log yet", "", "", "", 200, ""},
		{"no log yet, tail", "", "", "?tail=10", 200, ""},
		{"finished job, follow", "", "done\n", "?follow=1", 200, "done\n"},
		{"follow=false", "", "a\n", "?follow=false", 200, "a\n"},
		{"bad tail", "", "a\n", "?tail=-1", 400, `"field":"tail"`},
		{"tail not a number", "", "a\n", "?tail=1k", 400, `"field":"tail"`},
		{"bad follow", "", "a\n", "?follow=maybe", 400, `"field":"follow"`},
		{"unknown parameter", "", "a\n", "?since=1h", 400, `"field":"since"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			j := ts.submit(t, `{"command":["x"]}`)
			must(t, ts.node.SetState(j.ID, jobs.Succeeded, ""))
			writeLog(t, ts, j.ID, tt.older, tt.current)
			r := ts.do(t, "GET", "/api/v1/jobs/"+j.ID+"/logs"+tt.query, "")
			if r.code != tt.status {
				t.Fatalf("status %d %s, want %d", r.code, r.body, tt.status)
			}
			if tt.status != 200 {
				if !strings.Contains(r.body, tt.want) {
					t.Errorf("body %s lacks %s", r.body, tt.want)
				}
				return
			}
			if r.body != tt.want {
				t.Errorf("body %q, want %q", r.body, tt.want)
			}
			if ct := r.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// follower reads a followed log line by line from a real server.
type follower struct {
	t      *testing.T
	body   io.ReadCloser
	lines  *bufio.Reader
	cancel context.CancelFunc
}

func follow(t *testing.T, srv *httptest.Server, id, query string) *follower {
	t.Helper()
	// A deadlock guard, not a speed assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/jobs/"+id+"/logs?follow=1"+query, nil)
	must(t, err)
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("follow: status %d", resp.StatusCode)
	}
	f := &follower{t: t, body: resp.Body, lines: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(func() { resp.Body.Close(); cancel() })
	return f
}

func (f *follower) expect(want string) {
	f.t.Helper()
	got, err := f.lines.ReadString('\n')
	if err != nil || got != want {
		f.t.Fatalf("read %q (%v), want %q", got, err, want)
	}
}

func appendLog(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	must(t, err)
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestLogsFollow follows a job's log as it grows, is rotated the way the
// runner rotates it (rename to PATH.1, a new PATH) and ends with the job.
func TestLogsFollow(t *testing.T) {
	ts := newTestServer(t)
	srv := httptest.NewServer(ts.Handler())
	defer srv.Close()
	j := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(j.ID, jobs.Running, ""))
	path := writeLog(t, ts, j.ID, "", "start\n")

	f := follow(t, srv, j.ID, "")
	f.expect("start\n")
	appendLog(t, path, "two\n")
	f.expect("two\n")

	// Bytes written just before the rotation come before the new file's.
	appendLog(t, path, "last of the old file\n")
	must(t, os.Rename(path, path+".1"))
	appendLog(t, path, "first of the new file\n")
	f.expect("last of the old file\n")
	f.expect("first of the new file\n")

	appendLog(t, path, "three\n")
	f.expect("three\n")

	// The job ends after its last output: the stream ends after it.
	appendLog(t, path, "bye\n")
	must(t, ts.node.SetState(j.ID, jobs.Succeeded, "exit 0"))
	rest, err := io.ReadAll(f.lines)
	if err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	if string(rest) != "bye\n" {
		t.Errorf("after the end: %q, want %q", rest, "bye\n")
	}
}

// TestLogsFollowFromNothing follows a job whose log does not exist yet,
// and a tail when following.
func TestLogsFollowFromNothing(t *testing.T) {
	ts := newTestServer(t)
	srv := httptest.NewServer(ts.Handler())
	defer srv.Close()
	j := ts.submit(t, `{"command":["x"]}`)
	path, err := ts.node.LogPath(j.ID)
	must(t, err)

	f := follow(t, srv, j.ID, "&tail=0")
	appendLog(t, path, "hello\n")
	f.expect("hello\n")
	// Truncated in place to less than was read: read again from the start.
	must(t, os.WriteFile(path, []byte("re\n"), 0o600))
	f.expect("re\n")
	must(t, ts.node.SetState(j.ID, jobs.Failed, "exit 1"))
	if rest, err := io.ReadAll(f.lines); err != nil || len(rest) != 0 {
		t.Errorf("after the end: %q, %v", rest, err)
	}
}

// TestLogsFollowClientGone checks that a follower that hangs up ends the
// handler: srv.Close waits for every handler, so a leak hangs the test.
func TestLogsFollowClientGone(t *testing.T) {
	ts := newTestServer(t)
	srv := httptest.NewServer(ts.Handler())
	j := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(j.ID, jobs.Running, ""))
	writeLog(t, ts, j.ID, "", "running\n")
	f := follow(t, srv, j.ID, "")
	f.expect("running\n")
	f.cancel()
	f.body.Close()
	srv.Close()
}

// TestLogsFollowEndsOnClose checks that Close ends a follower, so that
// mmkd's shutdown does not wait for running jobs.
func TestLogsFollowEndsOnClose(t *testing.T) {
	ts := newTestServer(t)
	srv := httptest.NewServer(ts.Handler())
	defer srv.Close()
	j := ts.submit(t, `{"command":["x"]}`)
	must(t, ts.node.SetState(j.ID, jobs.Running, ""))
	writeLog(t, ts, j.ID, "", "running\n")
	f := follow(t, srv, j.ID, "")
	f.expect("running\n")
	ts.Close()
	ts.Close() // twice is harmless
	if rest, err := io.ReadAll(f.lines); err != nil || len(rest) != 0 {
		t.Errorf("after Close: %q, %v", rest, err)
	}
	// Other requests are still served.
	if r := ts.do(t, "GET", "/api/v1/jobs/"+j.ID, ""); r.code != 200 {
		t.Errorf("after Close: %d", r.code)
	}
}
