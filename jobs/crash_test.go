package jobs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crashHelper plays an mmkd that starts a job and is then killed: it
// starts the job its environment describes, prints "PID SHIMPID" and
// sleeps until the test sends it SIGKILL.
func crashHelper() int {
	r, err := NewRunner(testShim(RunnerOptions{Root: os.Getenv("MMK_TEST_ROOT")}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := r.Start(Launch{
		JobID:   os.Getenv("MMK_TEST_JOB"),
		Argv:    []string{"sh", "-c", os.Getenv("MMK_TEST_SCRIPT")},
		Env:     jobEnv(),
		WorkDir: os.Getenv("MMK_TEST_WORK"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d %d\n", p.PID, p.ShimPID)
	time.Sleep(time.Hour)
	return 0
}

// TestRunnerAdoptAfterCrash: a job outlives the SIGKILL of the mmkd that
// started it; a new Runner adopts it while it runs and learns its true
// exit code once it ends. The dead mmkd's stdout and stderr close with it
// (the shim holds neither).
func TestRunnerAdoptAfterCrash(t *testing.T) {
	root, work := t.TempDir(), t.TempDir()
	id := NewID(time.Now())
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), testModeEnv+"=crash-helper",
		"MMK_TEST_ROOT="+root, "MMK_TEST_JOB="+id, "MMK_TEST_WORK="+work,
		"MMK_TEST_SCRIPT=while [ ! -e go ]; do sleep 0.02; done; exit 7")
	var stderr bytes.Buffer
	helper.Stderr = &stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	stdout := bufio.NewReader(out)
	line, err := stdout.ReadString('\n')
	var pid, shimPID int
	if _, serr := fmt.Sscan(line, &pid, &shimPID); err != nil || serr != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper printed %q (%v, %v); stderr:\n%s", line, err, serr, stderr.String())
	}
	r := newTestRunner(t, RunnerOptions{Root: root})
	stopAtEnd(t, r, id)

	if err := helper.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() { _, err := io.ReadAll(stdout); eof <- err }()
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(eventually):
		t.Fatal("the killed helper's stdout is still open: the shim holds it")
	}
	if err := helper.Wait(); err == nil {
		t.Fatal("the helper was not killed")
	}

	p, e, err := r.Adopt(id)
	if err != nil || e != nil || p.PID != pid || p.ShimPID != shimPID {
		t.Fatalf("Adopt of the running job: %+v %+v %v, want pid %d shim %d running", p, e, err, pid, shimPID)
	}
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, r, id); got.Code != 7 || got.Signal != "" {
		t.Fatalf("Wait: %+v, want exit code 7", got)
	}
	if _, e, err := r.Adopt(id); err != nil || e == nil || e.Code != 7 {
		t.Fatalf("Adopt after the end: %+v %v, want exit code 7", e, err)
	}
}

// TestRunnerSupervisorLost: a job whose shim was killed has no exit
// record; Adopt, Wait and Stop say the supervisor is lost, and what is
// left of the job is killed.
func TestRunnerSupervisorLost(t *testing.T) {
	r := newTestRunner(t, RunnerOptions{})
	work := t.TempDir()
	l := shLaunch(work, "touch ready; while :; do sleep 0.02; done")
	p, err := r.Start(l)
	if err != nil {
		t.Fatal(err)
	}
	rec, found, err := readRecord(r.Dir(l.JobID), pidFile, parsePidRecord)
	if err != nil || !found {
		t.Fatalf("pid record: %v %v", found, err)
	}
	t.Cleanup(func() { _, _ = rec.Child.signalGroup(unix.SIGKILL) })
	waitFile(t, filepath.Join(work, "ready"))
	if err := unix.Kill(p.ShimPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for {
		if up, err := rec.Shim.running(); err != nil {
			t.Fatal(err)
		} else if !up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shim survived SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}

	r2 := newTestRunner(t, RunnerOptions{Root: r.o.Root})
	if _, e, err := r2.Adopt(l.JobID); !errors.Is(err, ErrSupervisorLost) || e != nil {
		t.Fatalf("Adopt: %+v %v, want ErrSupervisorLost", e, err)
	}
	for {
		if c, err := rec.Child.check(); err != nil {
			t.Fatal(err)
		} else if c != procRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job left without its shim still runs after Adopt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := r.wait(t.Context(), l.JobID); !errors.Is(err, ErrSupervisorLost) {
		t.Fatalf("wait: %v, want ErrSupervisorLost", err)
	}
	if e := wait(t, r2, l.JobID); e.Code != -1 || !strings.HasPrefix(e.Error, "supervisor lost: ") {
		t.Fatalf("Wait: %+v, want an Exit saying the supervisor is lost", e)
	}
	if err := r2.Stop(l.JobID, 0); !errors.Is(err, ErrSupervisorLost) {
		t.Fatalf("Stop: %v, want ErrSupervisorLost", err)
	}
}
