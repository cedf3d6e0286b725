package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

// socketClient is the test binary as a client of mmkd's socket: it sends
// one request and prints the status and the body.
func socketClient(sock, method, path, body string) int {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://mmkd"+path, rd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, b)
	return 0
}

// traversableTempDir is a temporary directory other users can pass
// through (0711; t.TempDir's are 0700).
func traversableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mmk-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// clientBin is a copy of the test binary that other users may run (the
// build directory is root's); set by TestSocketCallerRunsAsItself.
var clientBin string

// asUser runs one request over mmkd's socket from a process of uid and
// gid (the kernel's word for the caller, SO_PEERCRED), and returns the
// status and the body.
func asUser(t *testing.T, uid, gid uint32, sock, method, path, body string) (int, string) {
	t.Helper()
	cmd := exec.Command(clientBin, method, path, body)
	cmd.Env = append(os.Environ(), "MMK_TEST_SOCKET_CLIENT="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client as uid %d: %v %s", uid, err, out)
	}
	var code int
	var rest string
	if _, err := fmt.Sscanf(string(out), "%d", &code); err != nil {
		t.Fatalf("client output %q", out)
	}
	rest = strings.TrimSpace(strings.TrimPrefix(string(out), fmt.Sprint(code)))
	return code, rest
}

// TestSocketCallerRunsAsItself: a user who may connect to mmkd's socket
// (here through server.socket_group) gets jobs that run as itself, not
// as mmkd's user (root): the job reads its own uid from the kernel.
// Root's jobs are refused without jobs.allow_root, and a user may not
// cancel another user's job. Needs root (the test makes a client of uid
// 65534).
func TestSocketCallerRunsAsItself(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := traversableTempDir(t)
	clientBin = filepath.Join(dir, "client")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clientBin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, freeAddr(t), "MMK_JOBS_ALLOW_ROOT=false", "MMK_SERVER_SOCKET_GROUP=65534")
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	}()
	sock := filepath.Join(dir, "mmkd.sock")
	const nobody = 65534
	job := `{"name":"whoami","command":["sh","-c","grep -E '^(Uid|Gid):' /proc/self/status"]}`
	code, body := asUser(t, nobody, nobody, sock, "POST", "/api/v1/jobs", job)
	if code != http.StatusCreated {
		t.Fatalf("submit as uid %d = %d %s", nobody, code, body)
	}
	var j jobs.Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	if j.Owner == nil || j.Owner.UID != nobody {
		t.Fatalf("job owner %+v, want uid %d", j.Owner, nobody)
	}
	d.waitState(t, j.ID, jobs.Succeeded)
	code, log := asUser(t, nobody, nobody, sock, "GET", "/api/v1/jobs/"+j.ID+"/logs", "")
	if code != 200 || !strings.Contains(log, "Uid:\t65534\t65534") || !strings.Contains(log, "Gid:\t65534\t65534") {
		t.Errorf("the job's log = %d %q: want it run as uid and gid 65534", code, log)
	}
	// Root over the socket (this test) is refused: jobs.allow_root is off.
	code, body = asUser(t, 0, 0, sock, "POST", "/api/v1/jobs", job)
	if code != http.StatusForbidden || !strings.Contains(body, "allow_root") {
		t.Errorf("a job of root = %d %s, want 403 naming jobs.allow_root", code, body)
	}
	// Another user may neither cancel nor read the job of uid 65534.
	long := `{"name":"long","command":["sleep","30"]}`
	code, body = asUser(t, nobody, nobody, sock, "POST", "/api/v1/jobs", long)
	if code != http.StatusCreated {
		t.Fatalf("submit = %d %s", code, body)
	}
	_ = json.Unmarshal([]byte(body), &j)
	for _, req := range [][2]string{{"POST", "/api/v1/jobs/" + j.ID + "/cancel"}, {"GET", "/api/v1/jobs/" + j.ID + "/logs"}} {
		if code, body := asUser(t, 65533, 65534, sock, req[0], req[1], ""); code != http.StatusForbidden {
			t.Errorf("%s %s as uid 65533 = %d %s, want 403", req[0], req[1], code, body)
		}
	}
	if code, body := asUser(t, nobody, nobody, sock, "POST", "/api/v1/jobs/"+j.ID+"/cancel", ""); code != 200 {
		t.Errorf("cancel by its owner = %d %s", code, body)
	}
	d.waitState(t, j.ID, jobs.Cancelled)
	// A user outside the socket's group cannot connect at all.
	cmd := exec.Command(clientBin, "GET", "/api/v1/jobs", "")
	cmd.Env = append(os.Environ(), "MMK_TEST_SOCKET_CLIENT="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65533, Gid: 65533}}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "permission denied") {
		t.Errorf("a user outside the socket's group: %v %s, want permission denied", err, out)
	}
}
