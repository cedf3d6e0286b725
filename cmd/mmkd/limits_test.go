package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lowerNofile sets the process's descriptor limit (the test binary as
// mmkd, MMK_TEST_NOFILE).
func lowerNofile(n string) {
	v, err := strconv.ParseUint(n, 10, 64)
	if err == nil {
		err = unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: v, Max: v})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "MMK_TEST_NOFILE:", err)
		os.Exit(2)
	}
}

// TestIdleConnectionsLeaveRoomForJobs: an mmkd with 300 descriptors
// (its cap of connections then falls to the least, 16) gets 2,000
// connections that say nothing. Jobs still start (their shims need
// descriptors: the cap kept them), a client connected before goes on
// being served, and so does the Unix socket, which has a cap of its own.
// Without the cap mmkd accepted every connection until accept and job
// starts failed with "too many open files".
func TestIdleConnectionsLeaveRoomForJobs(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	d := startDaemon(t, dir, addr, "MMK_TEST_NOFILE=300")
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	}()
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	// A client connected before the flood, kept alive.
	early, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	earlyR := bufio.NewReader(early)
	request := func(method, path, body string) (int, string) {
		t.Helper()
		fmt.Fprintf(early, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			method, path, addr, strings.TrimSpace(string(tok)), len(body), body)
		_ = early.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(earlyR, nil)
		if err != nil {
			t.Fatalf("%s %s on the early connection: %v", method, path, err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return resp.StatusCode, b.String()
	}
	if code, body := request("GET", "/readyz", ""); code != 200 {
		t.Fatalf("readyz = %d %s", code, body)
	}
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 2000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	time.Sleep(200 * time.Millisecond)
	code, body := request("POST", "/api/v1/jobs", `{"name":"starts","command":["sh","-c","echo started"]}`)
	if code != http.StatusCreated {
		t.Fatalf("submit during the flood = %d %s", code, body)
	}
	id := body[strings.Index(body, `"id":"`)+6:]
	id = id[:strings.IndexByte(id, '"')]
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, body := request("GET", "/api/v1/jobs/"+id, "")
		if code == 200 && strings.Contains(body, `"state":"succeeded"`) {
			break
		}
		if code != 200 || strings.Contains(body, `"state":"failed"`) || time.Now().After(deadline) {
			t.Fatalf("job %s during the flood: %d %s\nmmkd log:\n%s", id, code, body, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The socket has connections of its own.
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dir, "mmkd.sock"))
	}}, Timeout: 10 * time.Second}
	resp, err := overSocket.Get("http://mmkd/api/v1/jobs/" + id)
	if err != nil {
		t.Fatalf("the socket during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the socket during the flood: %s", resp.Status)
	}
	if strings.Contains(d.log.String(), "too many open files") {
		t.Errorf("mmkd ran out of descriptors:\n%s", d.log)
	}
}
