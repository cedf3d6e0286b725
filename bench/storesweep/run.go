package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// Outcomes of one start of mmkd on a damaged store.
const (
	// outReady: mmkd became ready (/readyz 200).
	outReady = "ready"
	// outRefused: mmkd stopped with an error, its store and backup
	// untouched.
	outRefused = "refused"
	// outCrash: mmkd died of a signal, a panic or a fatal error of the
	// runtime, or refused after changing its store.
	outCrash = "crash"
	// outHung: mmkd was neither ready nor stopped within the bound.
	outHung = "hung"
	// outChanged: mmkd stopped with an error after changing its store or
	// backup.
	outChanged = "refused-changed"
)

// result is one case of the sweep: a JSON line of the raw output.
type result struct {
	Flips int    `json:"flips"`
	Seed  uint64 `json:"seed"`
	// MetaHit: a flip fell in one of bbolt's two meta pages.
	MetaHit bool   `json:"metaHit"`
	Outcome string `json:"outcome"`
	// Restored: mmkd restored the backup; otherwise it kept the store.
	Restored bool `json:"restored"`
	// SetAside counts the records mmkd set aside, PutBack those it put
	// back from the backup.
	SetAside int      `json:"setAside"`
	PutBack  int      `json:"putBack"`
	Lost     []string `json:"lost,omitempty"`
	LostKeys []string `json:"lostKeys,omitempty"`
	Changed  []string `json:"changed,omitempty"`
	// Seconds is start to ready (or to its end).
	Seconds float64 `json:"seconds"`
	// Detail says why mmkd refused or crashed, or what the verify found
	// wrong.
	Detail string `json:"detail,omitempty"`
}

// sweep is what every case shares.
type sweep struct {
	bin      string // mmkd
	self     string // this command, for its verify child
	template string // the template store
	jobsFile string // its jobs, as JSON
	cache    string // the predictor's cache, trained once
	work     string // a directory per case under it
	bound    time.Duration
	used     int    // the template's pages, in bytes: where flips fall
	logs     string // where each case's mmkd log is kept ("": nowhere)
}

// flip copies data and flips n random bytes of its first used bytes
// (seeded: the same seed and n flip the same bytes), anywhere in the
// store's pages. It reports whether a flip fell in the two meta pages.
func flip(data []byte, used, n int, seed uint64) ([]byte, bool) {
	out := bytes.Clone(data)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	meta := false
	for range n {
		at := r.IntN(used)
		out[at] ^= byte(1 + r.IntN(255))
		meta = meta || at < 2*4096
	}
	return out, meta
}

// one runs mmkd on the template store with n flips of seed and judges
// its start.
func (sw *sweep) one(data []byte, n int, seed uint64) result {
	res := result{Flips: n, Seed: seed}
	damaged, meta := flip(data, sw.used, n, seed)
	res.MetaHit = meta
	dir := filepath.Join(sw.work, fmt.Sprintf("flips%d-seed%d", n, seed))
	if err := sw.prepare(dir, damaged); err != nil {
		res.Outcome, res.Detail = outCrash, "the sweep: "+err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	store := filepath.Join(dir, "mmk.db")
	sumStore, sumBackup := sum(store), sum(store+jobs.BackupSuffix)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		res.Outcome, res.Detail = outCrash, "the sweep: "+err.Error()
		return res
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(sw.bin, "--backend", "fake", "--data-dir", dir, "--listen", addr, "--log-level", "info")
	cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=false", "MMK_JOBS_ALLOW_ROOT=true", "MMK_JOBS_RETENTION=0")
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		res.Outcome, res.Detail = outCrash, "the sweep: start mmkd: "+err.Error()
		return res
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ready, exitErr, exited := sw.waitReady(dir, addr, done, t0)
	res.Seconds = time.Since(t0).Seconds()
	if ready {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case exitErr = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			exitErr = <-done
			res.Outcome, res.Detail = outHung, "did not stop within 30 s of SIGTERM"
		}
		exited = true
	} else if !exited {
		_ = cmd.Process.Kill()
		<-done
		res.Outcome, res.Detail = outHung, fmt.Sprintf("neither ready nor stopped within %v", sw.bound)
		return res
	}
	out := log.String()
	if sw.logs != "" {
		_ = os.WriteFile(filepath.Join(sw.logs, filepath.Base(dir)+".log"), []byte(out), 0o644)
	}
	res.SetAside = strings.Count(out, "was set aside")
	if m := putBackRE.FindStringSubmatch(out); m != nil {
		res.PutBack, _ = strconv.Atoi(m[1])
	}
	if c := crashed(exitErr, out, ready); c != "" {
		res.Outcome, res.Detail = outCrash, c
		return res
	}
	if res.Outcome == outHung {
		return res
	}
	res.Restored = strings.Contains(out, "restored from its backup")
	if !ready {
		res.Outcome, res.Detail = outRefused, lastLine(out)
		if sum(store) != sumStore || sum(store+jobs.BackupSuffix) != sumBackup {
			res.Outcome = outChanged
		}
		return res
	}
	res.Outcome = outReady
	v, err := sw.verify(store)
	if err != nil {
		res.Outcome, res.Detail = outCrash, "verify: "+err.Error()
		return res
	}
	res.SetAside = max(res.SetAside, v.SetAside)
	res.Lost, res.LostKeys, res.Changed = v.Lost, v.LostKeys, v.Changed
	if len(v.Lost)+len(v.LostKeys)+len(v.Changed) > 0 {
		res.Detail = fmt.Sprintf("lost %d jobs, %d keys, %d changed", len(v.Lost), len(v.LostKeys), len(v.Changed))
	}
	return res
}

// prepare makes a data directory with the damaged store, the template's
// backup and the predictor's cache (so that mmkd does not train).
func (sw *sweep) prepare(dir string, store []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mmk.db"), store, 0o600); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := copyFile(sw.template+jobs.BackupSuffix, filepath.Join(dir, "mmk.db"+jobs.BackupSuffix)); err != nil {
		return err
	}
	return copyFile(sw.cache, filepath.Join(dir, filepath.Base(sw.cache)))
}

// waitReady waits until mmkd answers /readyz 200 (ready), ends (exited,
// with its end) or the bound passes.
func (sw *sweep) waitReady(dir, addr string, done <-chan error, t0 time.Time) (ready bool, exitErr error, exited bool) {
	c := &http.Client{Timeout: time.Second}
	for time.Since(t0) < sw.bound {
		select {
		case err := <-done:
			return false, err, true
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(dir, "token")); err == nil {
			req, _ := http.NewRequest("GET", "http://"+addr+"/readyz", nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return true, nil, false
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false, nil, false
}

// crashed says why mmkd's end is a crash ("" if it is not): a signal
// other than the sweep's SIGTERM, exit status 2 (a Go panic or fatal
// error), or the runtime's words at the start of a line of its output
// (a child's crash quoted inside a log line is not mmkd's).
func crashed(exitErr error, out string, stopped bool) string {
	var ee *exec.ExitError
	if errors.As(exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !(stopped && ws.Signal() == syscall.SIGTERM) {
			return "killed by " + ws.Signal().String()
		}
		if ee.ExitCode() == 2 {
			return "exit status 2: " + firstRuntimeLine(out)
		}
	}
	if l := firstRuntimeLine(out); l != "" {
		return l
	}
	return ""
}

// firstRuntimeLine is the first line of out that the Go runtime writes
// when a process crashes.
func firstRuntimeLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		for _, p := range []string{"panic:", "fatal error:", "unexpected fault address", "SIGSEGV", "SIGBUS", "goroutine "} {
			if strings.HasPrefix(l, p) {
				return l
			}
		}
	}
	return ""
}

// lastLine is the last line of out that is not empty.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// verify runs the verify child on the store mmkd left.
func (sw *sweep) verify(store string) (verdict, error) {
	var v verdict
	cmd := exec.Command(sw.self, "verify", store, sw.jobsFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return v, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return v, fmt.Errorf("its answer: %w", err)
	}
	return v, nil
}

// putBackRE finds how many records mmkd put back from the backup in its
// log.
var putBackRE = regexp.MustCompile(`put back from the backup.* records=(\d+)`)

// sum is a file's SHA-256 ("" if it cannot be read).
func sum(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}
