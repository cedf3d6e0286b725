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
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
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
