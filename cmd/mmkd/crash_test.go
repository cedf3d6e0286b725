package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/cmd/internal/clitest"
	"github.com/mmkgpu/mmk/jobs"
)

// TestMain lets the test binary play mmkd (for the crash test), the
// job supervisor mmkd starts and its store check (os.Executable is the
// test binary), and runs the tests off the machine's state (clitest).
func TestMain(m *testing.M) {
	clitest.Child()
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(jobs.ShimMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "check-store" {
		if mark := os.Getenv(storeCheckFaultEnv); mark != "" {
			if f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
				f.Close()
				faultInGoroutine()
			}
		}
		os.Exit(jobs.CheckStoreMain(os.Args[2:]))
	}
	if os.Getenv("MMK_TEST_AS_MMKD") == "1" {
		if n := os.Getenv("MMK_TEST_NOFILE"); n != "" {
			lowerNofile(n)
		}
		main()
		os.Exit(0)
	}
	if sock := os.Getenv("MMK_TEST_SOCKET_CLIENT"); sock != "" {
		os.Exit(socketClient(sock, os.Args[1], os.Args[2], os.Args[3]))
	}
	clitest.Main(m)
}

// daemon is an mmkd process of the crash test.
type daemon struct {
	cmd     *exec.Cmd
	addr    string
	dataDir string
	log     *syncBuffer
}

// do sends a request over TCP with the token mmkd wrote into its data
// directory.
func (d *daemon) do(method, path string, body io.Reader) (*http.Response, error) {
	tok, err := os.ReadFile(filepath.Join(d.dataDir, "token"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return http.DefaultClient.Do(req)
}

// syncBuffer is a buffer the process's stderr copier and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is the log without the access log's lines.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if !strings.Contains(l, "msg=http ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDaemon starts mmkd (this test binary) on the fake GPUs, with env
// added to its environment (by default jobs may run as root: the tests
// run as root).
func startDaemon(t *testing.T, dataDir, addr string, env ...string) *daemon {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--backend", "fake", "--data-dir", dataDir, "--listen", addr, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "MMK_TEST_AS_MMKD=1", "MMK_KERNELSCHED_ENABLED=false", "MMK_JOBS_ALLOW_ROOT=true")
	cmd.Env = append(cmd.Env, env...)
	d := &daemon{cmd: cmd, addr: addr, dataDir: dataDir, log: &syncBuffer{}}
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := d.do("GET", "/readyz", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("mmkd did not become ready:\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *daemon) submit(t *testing.T, spec string) string {
	t.Helper()
	resp, err := d.do("POST", "/api/v1/jobs", strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j jobs.Job
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &j) != nil {
		t.Fatalf("submit %s: %d %s", spec, resp.StatusCode, body)
	}
	return j.ID
}

func (d *daemon) job(t *testing.T, id string) jobs.Job {
	t.Helper()
	resp, err := d.do("GET", "/api/v1/jobs/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j jobs.Job
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitState waits until the job is in state want.
func (d *daemon) waitState(t *testing.T, id string, want jobs.State) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j := d.job(t, id)
		if j.State == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s (%s) is %s (%s), want %s\nmmkd log:\n%s", id, j.Spec.Name, j.State, j.Reason, want, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrash is the daemon's crash test: jobs run, mmkd is killed with
// SIGKILL, some jobs end while it is down, and a new mmkd on the same
// data directory finds every job: the ones that ended with their true
// exit status, the running ones adopted (same process) and followed to
// their end, the pending one placed once there is room.
func TestCrash(t *testing.T) {
	dir, gates := t.TempDir(), t.TempDir()
	addr := freeAddr(t)
	d := startDaemon(t, dir, addr)
	gate := func(name string) string { return filepath.Join(gates, name) }
	// Whatever happens, the jobs end with the test: every gate opens
	// before the temporary directories go.
	t.Cleanup(func() {
		for _, g := range []string{"a", "b", "c", "d"} {
			_ = os.WriteFile(gate(g), nil, 0o644)
		}
		time.Sleep(200 * time.Millisecond)
	})
	spec := func(name, script string, memMiB int) string {
		b, _ := json.Marshal(map[string]any{"name": name, "type": "offline", "command": []string{"sh", "-c", script}, "memoryMiB": memMiB})
		return string(b)
	}
	wait := func(g string, code int) string {
		return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; exit %d", g, code)
	}
	// Two jobs that need most of the H200 (the one instance with that
	// much memory): one runs, one waits.
	big1 := d.submit(t, spec("big-1", wait(gate("d"), 0), 100000))
	d.waitState(t, big1, jobs.Running)
	big2 := d.submit(t, spec("big-2", "exit 0", 100000))
	ok := d.submit(t, spec("ends-ok", wait(gate("a"), 0), 1000))
	bad := d.submit(t, spec("ends-5", wait(gate("b"), 5), 1000))
	long := d.submit(t, spec("outlives", wait(gate("c"), 0), 1000))
	gone := d.submit(t, spec("cancelled", "sleep 60", 1000))
	for _, id := range []string{ok, bad, long, big1, gone} {
		d.waitState(t, id, jobs.Running)
	}
	d.waitState(t, big2, jobs.Pending)
	resp, err := d.do("POST", "/api/v1/jobs/"+gone+"/cancel", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	d.waitState(t, gone, jobs.Cancelled)
	pidBefore := d.job(t, long).PID

	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
	// Two jobs end while no mmkd runs.
	for _, g := range []string{"a", "b"} {
		if err := os.WriteFile(gate(g), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)

	d = startDaemon(t, dir, addr)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	}()
	if j := d.waitState(t, ok, jobs.Succeeded); j.ExitCode == nil || *j.ExitCode != 0 {
		t.Errorf("ends-ok: exit %v", j.ExitCode)
	}
	if j := d.waitState(t, bad, jobs.Failed); j.ExitCode == nil || *j.ExitCode != 5 {
		t.Errorf("ends-5: exit %v, reason %q", j.ExitCode, j.Reason)
	}
	if j := d.job(t, long); j.State != jobs.Running || j.PID != pidBefore {
		t.Errorf("outlives: %s pid %d, want running pid %d (adopted)", j.State, j.PID, pidBefore)
	}
	if j := d.job(t, gone); j.State != jobs.Cancelled {
		t.Errorf("cancelled job is %s", j.State)
	}
	d.waitState(t, big1, jobs.Running)
	if j := d.job(t, big2); j.State != jobs.Pending {
		t.Errorf("big-2 is %s, want pending until big-1 ends", j.State)
	}
	for _, g := range []string{"c", "d"} {
		if err := os.WriteFile(gate(g), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.waitState(t, long, jobs.Succeeded)
	d.waitState(t, big1, jobs.Succeeded)
	if j := d.waitState(t, big2, jobs.Succeeded); j.ExitCode == nil || *j.ExitCode != 0 {
		t.Errorf("big-2: exit %v", j.ExitCode)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Errorf("mmkd after SIGTERM: %v\n%s", err, d.log)
	}
}

// storeCheckFaultEnv names a file: the test binary, run as "mmkd
// check-store", makes it and faults, as bbolt's tx.Check did on a
// damaged store, unless it is there (so the first check faults: the
// store's, not the backup's).
const storeCheckFaultEnv = "MMK_TEST_STORE_CHECK_FAULT"

// faultInGoroutine reads past the end of a mapped file in a goroutine of
// its own, where debug.SetPanicOnFault does not reach: the runtime stops
// the process with "fatal error: fault" (SIGBUS), as a damaged store did
// in tx.Check's goroutine.
func faultInGoroutine() {
	f, err := os.CreateTemp("", "fault")
	if err == nil {
		os.Remove(f.Name())
		var m []byte
		if m, err = syscall.Mmap(int(f.Fd()), 0, 2*os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
			done := make(chan byte)
			go func() { done <- m[os.Getpagesize()] }()
			<-done
		}
	}
	// Where the read did not fault (seen without the race detector, the
	// mapping's end read as zeros), a nil dereference in a goroutine of its
	// own kills the process alike, with status 2.
	fmt.Fprintln(os.Stderr, "faultInGoroutine: the mapped read did not fault:", err)
	var p *int
	done := make(chan int)
	go func() { done <- *p }()
	<-done
	os.Exit(1)
}
