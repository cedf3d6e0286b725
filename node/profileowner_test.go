package node

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/trace"
)

// hookTrace is a profiling phase's trace as the hook writes it: two
// runs of two kernels.
func hookTrace() string {
	var b strings.Builder
	for iter, at := range []float64{0, 2000} {
		fmt.Fprintf(&b, `{"iter":%d,"name":"k1","grid":[4,1,1],"block":[128,1,1],"regs":16,"smem":0,"occ":0,"stream":7,"ts":%g,"dur":100,"launch_ts":%g,"launch_api":"cuLaunchKernel"}`+"\n", iter, at, at)
		fmt.Fprintf(&b, `{"iter":%d,"name":"k2","grid":[8,1,1],"block":[256,1,1],"regs":16,"smem":0,"occ":0,"stream":7,"ts":%g,"dur":200,"launch_ts":%g,"launch_api":"cuLaunchKernel"}`+"\n", iter, at+120, at+10)
	}
	return b.String()
}

// TestProfileOfAnotherUsersJob (issue 38, row 8): a job that runs as
// another user than mmkd's (uid 65534) gets its profiling phase's trace
// written where that user may write, mmkd stores the profile, and the
// next job of its task key uses it instead of being profiled again.
// Before, the hook, running as the job's user, could not write into the
// root-owned profile directory, and every job of the key was profiled
// again. Needs root (the trace is written by a process of uid 65534, as
// the hook in the job would).
func TestProfileOfAnotherUsersJob(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write the trace as another user")
	}
	dir, err := os.MkdirTemp("", "mmk-profiles-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil { // others may pass through, as /var/lib
		t.Fatal(err)
	}
	n := &Node{cfg: Config{Sched: &SchedConfig{Policy: "fikit", ProfileDir: filepath.Join(dir, "profiles")},
		Log: slog.New(slog.DiscardHandler)}, phases: map[string]*trace.ProfilePhase{}}
	nobody := &jobs.Owner{UID: 65534, GID: 65534}
	first := jobs.Job{ID: "j1", TaskKey: "train", Owner: nobody}
	env, err := n.profilePhase(&first, gpuInfo{})
	if err != nil || env == nil {
		t.Fatalf("the first job of task key train is not profiled: %v %v", env, err)
	}
	// The hook, in the job, as uid 65534: MMK_PROFILE_OUT.tmp, renamed.
	cmd := exec.Command("sh", "-c", `cat > "$MMK_PROFILE_OUT.tmp" && mv "$MMK_PROFILE_OUT.tmp" "$MMK_PROFILE_OUT"`)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(hookTrace())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the job's user cannot write its profiling trace (%v): %s", err, out)
	}
	n.collectProfiles()
	if len(n.phases) != 0 {
		t.Errorf("the phase of job j1 is still open after its trace was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "profiles", trace.TracesDir, "j1")); !os.IsNotExist(err) {
		t.Errorf("the job's trace directory is left after its profile was stored: %v", err)
	}
	second := jobs.Job{ID: "j2", TaskKey: "train", Owner: nobody}
	if env, err := n.profilePhase(&second, gpuInfo{}); err != nil || env != nil {
		t.Errorf("the next job of task key train is profiled again (%v, %v): the first's profile was not stored", env, err)
	}
}
