package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
)

// The files of a job directory (docs/jobs.md describes them).
const (
	launchFile    = "launch.json"  // what to run; written by Start, removed by the shim once read
	pidFile       = "pid.json"     // the child's and the shim's identities, once the child runs
	exitFile      = "exit.json"    // how the child ended, or why it could not start
	exitReserve   = "exit.reserve" // space the shim sets aside for exit.json, should the disk fill up
	stopFile      = "stop.json"    // a stop request's grace period, read by the shim on SIGUSR1
	logFile       = "log"          // the child's stdout and stderr; log.1 is the previous one
	shimLogFile   = "shim.log"     // the shim's own messages
	checkpointDir = "checkpoint"   // $MMK_CHECKPOINT_DIR, kept across restarts
	jobFile       = "job.json"     // the job's record as mmkd placed it, to adopt it should the store be lost
)

// recordVersion is the version of the record formats this mmk writes. A
// reader accepts versions 1 to recordVersion and ignores fields it does
// not know, so that an mmkd and the shims of an older or newer one that
// still run can read each other's records.
const recordVersion = 1

// launchRecord is what the shim runs. It holds the job's environment,
// which may hold secrets: it is written 0600 into a 0700 directory and
// removed by the shim as soon as it has read it.
type launchRecord struct {
	Version int      `json:"version"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	// LogMaxBytes caps each log file; 0: no cap.
	LogMaxBytes int64 `json:"logMaxBytes"`
	// User, if set, is the user the job runs as (the shim's own user
	// otherwise).
	User *User `json:"user,omitempty"`
	// StopGrace is the grace period of a stop request whose record
	// cannot be read (it could not be written: a full disk); 0:
	// shimDefaultGrace.
	StopGrace time.Duration `json:"stopGraceNs,omitempty"`
}

// procIdent names one process across pid reuse: its pid, its start time
// in clock ticks after boot (field 22 of /proc/<pid>/stat) and the boot.
type procIdent struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"startTicks"`
	BootID     string `json:"bootID"`
}

// pidRecord is written by the shim once the child runs.
type pidRecord struct {
	Version   int       `json:"version"`
	Child     procIdent `json:"child"`
	Shim      procIdent `json:"shim"`
	StartedAt time.Time `json:"startedAt"`
	// Cgroup is the job's cgroup directory ("" where cgroup v2 was not
	// used): what is left of a job whose shim is gone is killed there
	// too.
	Cgroup string `json:"cgroup,omitempty"`
}

// Exit is how a job's process ended, as its shim recorded it.
type Exit struct {
	// Code is the exit status; -1 when a signal killed the process (see
	// Signal) or when it never started (see Error).
	Code int `json:"code"`
	// Signal names the signal that killed it ("SIGKILL").
	Signal string `json:"signal,omitempty"`
	// At is when the shim saw it end.
	At time.Time `json:"at"`
	// Error says why the process could not be started (no such program,
	// bad working directory); empty when it ran.
	Error string `json:"error,omitempty"`
	// Stopped says a stop request (Runner.Stop) had reached the shim when
	// the process ended: it ended because it was asked to (or just as it
	// was). A job that ends on its own before the request has it false,
	// so that a stop that comes too late is not taken for its reason.
	Stopped bool `json:"stopped,omitempty"`
}

// exitRecord is the exit file: an Exit with the format's version.
type exitRecord struct {
	Version int `json:"version"`
	Exit
}

// stopRecord asks the shim to stop the job: SIGTERM to its process group
// at once, SIGKILL after Grace.
type stopRecord struct {
	Version int           `json:"version"`
	Grace   time.Duration `json:"graceNs"`
}

func checkVersion(v int) error {
	if v < 1 || v > recordVersion {
		return fmt.Errorf("record version %d: this mmk reads 1 to %d", v, recordVersion)
	}
	return nil
}

func parseLaunch(data []byte) (launchRecord, error) {
	var l launchRecord
	if err := json.Unmarshal(data, &l); err != nil {
		return launchRecord{}, fmt.Errorf("launch record: %w", err)
	}
	if err := checkVersion(l.Version); err != nil {
		return launchRecord{}, fmt.Errorf("launch record: %w", err)
	}
	switch {
	case len(l.Argv) == 0 || l.Argv[0] == "":
		return launchRecord{}, errors.New("launch record: no program")
	case l.Dir == "" || !filepath.IsAbs(l.Dir) || strings.IndexByte(l.Dir, 0) >= 0:
		return launchRecord{}, fmt.Errorf("launch record: working directory %q is not an absolute path", l.Dir)
	case l.LogMaxBytes < 0:
		return launchRecord{}, fmt.Errorf("launch record: log cap %d is negative", l.LogMaxBytes)
	}
	for i, a := range l.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return launchRecord{}, fmt.Errorf("launch record: argv[%d] holds a NUL byte", i)
		}
	}
	for i, e := range l.Env {
		if strings.IndexByte(e, 0) >= 0 || strings.IndexByte(e, '=') <= 0 {
			return launchRecord{}, fmt.Errorf("launch record: env[%d] is not KEY=VALUE without NUL", i)
		}
	}
	return l, nil
}

func parsePidRecord(data []byte) (pidRecord, error) {
	var p pidRecord
	if err := json.Unmarshal(data, &p); err != nil {
		return pidRecord{}, fmt.Errorf("pid record: %w", err)
	}
	if err := checkVersion(p.Version); err != nil {
		return pidRecord{}, fmt.Errorf("pid record: %w", err)
	}
	if p.Child.PID <= 0 || p.Shim.PID <= 0 {
		return pidRecord{}, fmt.Errorf("pid record: pids %d and %d: want positive", p.Child.PID, p.Shim.PID)
	}
	return p, nil
}

func parseExitRecord(data []byte) (Exit, error) {
	var e exitRecord
	if err := json.Unmarshal(data, &e); err != nil {
		return Exit{}, fmt.Errorf("exit record: %w", err)
	}
	if err := checkVersion(e.Version); err != nil {
		return Exit{}, fmt.Errorf("exit record: %w", err)
	}
	return e.Exit, nil
}

func parseStopRecord(data []byte) (stopRecord, error) {
	var s stopRecord
	if err := json.Unmarshal(data, &s); err != nil {
		return stopRecord{}, fmt.Errorf("stop record: %w", err)
	}
	if err := checkVersion(s.Version); err != nil {
		return stopRecord{}, fmt.Errorf("stop record: %w", err)
	}
	if s.Grace < 0 {
		return stopRecord{}, fmt.Errorf("stop record: grace %v is negative", s.Grace)
	}
	return s, nil
}

// readRecord reads and parses dir/name; found is false when the file does
// not exist.
func readRecord[T any](dir, name string, parse func([]byte) (T, error)) (rec T, found bool, err error) {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read %s: %w", path, err)
	}
	rec, err = parse(data)
	if err != nil {
		return rec, false, fmt.Errorf("%s: %w", path, err)
	}
	return rec, true, nil
}

// writeRecord writes v as JSON to dir/name atomically with
// WriteRecordFile.
func writeRecord(dir, name string, v any) error {
	return writeRecordWith(WriteRecordFile, dir, name, v)
}

// writeRecordWith writes v as JSON to dir/name with write.
func writeRecordWith(write func(path string, data []byte) error, dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return write(filepath.Join(dir, name), append(data, '\n'))
}

// WriteRecordFile writes a job record atomically (temporary file, fsync,
// rename), readable by mmkd's user only (0600): a job's directory is
// traversable by the job's user (0711), and its records name its
// processes and cgroup.
func WriteRecordFile(path string, data []byte) error {
	return atomicfile.WriteFunc(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeLaunch writes the launch file readable by its owner only. It needs
// no rename: the shim that reads it is started after it is written.
func writeLaunch(dir string, l launchRecord) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode launch record: %w", err)
	}
	path := filepath.Join(dir, launchFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write launch record: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write launch record: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write launch record %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write launch record %s: %w", path, err)
	}
	return nil
}
