package jobs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSetsidChildDiesWithJob: a job whose process starts a child in a
// session of its own (setsid: it leaves the job's process group) and
// exits does not leave that child running: the shim kills the job's
// cgroup. Where cgroup v2 cannot be used the test is skipped.
func TestSetsidChildDiesWithJob(t *testing.T) {
	if _, err := cgroupRoot(); err != nil {
		t.Skipf("no writable cgroup v2: %v", err)
	}
	r := newTestRunner(t, RunnerOptions{})
	pidFile := filepath.Join(t.TempDir(), "escaped.pid")
	l := shLaunch("", "setsid sh -c 'echo $$ > "+pidFile+"; exec sleep 300' </dev/null >/dev/null 2>&1 & "+
		"while [ ! -s "+pidFile+" ]; do sleep 0.01; done; exit 0")
	start(t, r, l)
	if e := wait(t, r, l.JobID); e.Code != 0 || e.Error != "" {
		t.Fatalf("exit %+v", e)
	}
	pid := readPID(t, pidFile)
	// The kill happens before the exit record; allow the kernel a moment
	// to tear the process down.
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d, started with setsid by the job, outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(mustCgroupRoot(t), cgroupPrefix+l.JobID)); !os.IsNotExist(err) {
		t.Errorf("the job's cgroup is still there (%v)", err)
	}
}

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.State != 'Z'
}

func mustCgroupRoot(t *testing.T) string {
	t.Helper()
	root, err := cgroupRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestFreezeReachesSetsid (issue 54, item 2): freezing a job stops every
// process of it, also a child that left its process group (setsid),
// which a SIGSTOP to the group missed (it kept running while the job was
// listed suspended); thawing lets it run on. Where cgroup v2 cannot be
// used Freeze says so (ok false) and the test is skipped.
func TestFreezeReachesSetsid(t *testing.T) {
	if _, err := cgroupRoot(); err != nil {
		t.Skipf("no writable cgroup v2: %v", err)
	}
	r := newTestRunner(t, RunnerOptions{})
	dir := t.TempDir()
	pidFile, count := filepath.Join(dir, "escaped.pid"), filepath.Join(dir, "count")
	// The escaped child counts in a file, as fast as it can.
	l := shLaunch("", "setsid sh -c 'echo $$ > "+pidFile+"; i=0; while :; do i=$((i+1)); echo $i > "+count+"; done' </dev/null >/dev/null 2>&1 & "+
		"sleep 300")
	start(t, r, l)
	waitFile(t, pidFile)
	pid := readPID(t, pidFile)
	counted := func() string {
		b, _ := os.ReadFile(count)
		return strings.TrimSpace(string(b))
	}
	ok, err := r.Freeze(l.JobID, true)
	if !ok || err != nil {
		t.Fatalf("freeze: %v %v", ok, err)
	}
	if frozen, err := ProcessFrozen(pid); !frozen || err != nil {
		t.Fatalf("the setsid child %d: frozen %v, %v", pid, frozen, err)
	}
	a := counted()
	time.Sleep(200 * time.Millisecond)
	if b := counted(); a != b {
		t.Errorf("the setsid child counted on while its job was frozen: %s then %s", a, b)
	}
	if ok, err := r.Freeze(l.JobID, false); !ok || err != nil {
		t.Fatalf("thaw: %v %v", ok, err)
	}
	for end := time.Now().Add(5 * time.Second); counted() == a; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the child does not run after the thaw")
		}
	}
}

// readPID reads the process id a test's job wrote into path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
