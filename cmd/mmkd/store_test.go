package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// TestDamagedStore: mmkd backs its store up as it runs; killed, its store
// truncated to nothing, it restores the backup at the next start (saying
// so) and knows its jobs (from the backup, or from their directories for
// a run the backup missed). Without a backup it refuses to start on the
// damaged store, saying what to do; moved aside, it starts on a new
// store and adopts the jobs from their directories.
func TestDamagedStore(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	store := filepath.Join(dir, "mmk.db")
	d := startDaemon(t, dir, addr, "MMK_JOBS_BACKUP_EVERY=50ms")
	early := d.submit(t, `{"name":"early","command":["sh","-c","exit 4"]}`)
	d.waitState(t, early, jobs.Failed)
	time.Sleep(300 * time.Millisecond) // a backup with the job
	late := d.submit(t, `{"name":"late","command":["sh","-c","exit 5"]}`)
	d.waitState(t, late, jobs.Failed)
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	_ = d.cmd.Wait()
	if err := os.WriteFile(store, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	d = startDaemon(t, dir, addr, "MMK_JOBS_BACKUP_EVERY=0")
	for _, c := range []struct {
		id   string
		code int
	}{{early, 4}, {late, 5}} {
		if j := d.job(t, c.id); j.State != jobs.Failed || j.ExitCode == nil || *j.ExitCode != c.code {
			t.Errorf("job %s after the restore: %s exit %v, want failed with %d", c.id, j.State, j.ExitCode, c.code)
		}
	}
	if log := d.log.String(); !strings.Contains(log, "restored from its backup") || !strings.Contains(log, "damagedKeptAs") {
		t.Errorf("mmkd did not say it restored the store:\n%s", log)
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()

	// No backup: refused, with what to do.
	if err := os.Remove(store + jobs.BackupSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--backend", "fake", "--data-dir", dir, "--listen", addr)
	cmd.Env = append(os.Environ(), "MMK_TEST_AS_MMKD=1", "MMK_KERNELSCHED_ENABLED=false")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "damaged") || !strings.Contains(string(out), "move "+store+" aside") {
		t.Fatalf("mmkd on a damaged store without a backup: %v\n%s", err, out)
	}
	// Moved aside: a new store, the jobs adopted from their directories.
	if err := os.Rename(store, store+".aside"); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, dir, addr)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	}()
	if j := d.job(t, late); j.State != jobs.Failed || j.ExitCode == nil || *j.ExitCode != 5 || !strings.Contains(j.Reason, "adopted") {
		t.Errorf("job %s on a new store: %+v", late, j)
	}
}
