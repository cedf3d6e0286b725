// Command storesweep is the job store's corruption sweep (issue 38): it
// builds a store of at least 1 MiB with running, queued and ended jobs
// (mmkd's own store code), backs it up beside it as mmkd does, and for
// each seed and flip count copies it, flips that many random bytes
// anywhere in the file (seeded), starts the real mmkd on it (a process
// of its own on the fake backend, its own data directory) and judges
// the start: mmkd must not crash (signal, exit status 2, the runtime's
// words in its output); it becomes ready (keeping the store, or
// restoring the backup) or stops naming why with its store and backup
// untouched (refused); and once ready no job is lost: every job id of
// the store is there in a state its start explains, and every
// idempotency key finds its job. It writes a Markdown report and the
// raw results as JSON lines.
//
//	go run ./bench/storesweep -o docs/results/store-sweep.md -jsonl docs/results/store-sweep.jsonl
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/predictor"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		if err := verifyMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "storesweep:", err)
			os.Exit(1)
		}
		return
	}
	log.SetFlags(0)
	log.SetPrefix("storesweep: ")
	var c config
	flag.IntVar(&c.seeds, "seeds", 50, "seeds per flip count (1..seeds)")
	flag.StringVar(&c.flips, "flips", "64,8", "flip counts, comma-separated")
	flag.StringVar(&c.template, "template", "bench/storesweep/testdata/store.db.gz", "the store damaged, gzipped")
	rebuild := flag.Int("rebuild", 0, "build a new template of this many jobs (500 reach 1 MiB), write it to -template and stop")
	flag.IntVar(&c.parallel, "parallel", max(1, runtime.NumCPU()/2), "mmkd processes at once")
	flag.DurationVar(&c.bound, "bound", 6*time.Minute, "how long one start may take to be ready or stop (mmkd bounds its check at 5 min)")
	flag.StringVar(&c.bin, "mmkd", "", "mmkd binary (default: built from ./cmd/mmkd)")
	flag.StringVar(&c.md, "o", "", "Markdown report (default: stdout)")
	flag.StringVar(&c.jsonl, "jsonl", "", "raw results, a JSON line a case")
	flag.StringVar(&c.before, "before", "", "raw results of an earlier run to set beside this one in the report")
	flag.StringVar(&c.logs, "logs", "", "a directory to keep each case's mmkd log in")
	flag.StringVar(&c.only, "only", "", "run only these cases, FLIPS:SEED comma-separated (e.g. 64:26,64:45)")
	flag.Parse()
	if *rebuild > 0 {
		if err := writeTemplate(c.template, *rebuild); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

// config is the command's flags.
type config struct {
	seeds, parallel                 int
	flips, bin, md, jsonl, template string
	only, logs, before              string
	bound                           time.Duration
}

// minStore is the least size of the template store.
const minStore = 1 << 20

// caseID is one start: a flip count and a seed.
type caseID struct {
	flips int
	seed  uint64
}

func run(c config) error {
	cases, err := c.cases()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mmk-storesweep-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("this command's executable: %w", err)
	}
	sw := &sweep{bin: c.bin, self: self, work: tmp, bound: c.bound, logs: c.logs,
		template: filepath.Join(tmp, "template", "mmk.db"), jobsFile: filepath.Join(tmp, "jobs.json")}
	if sw.bin == "" {
		sw.bin = filepath.Join(tmp, "mmkd")
		if out, err := exec.Command("go", "build", "-o", sw.bin, "./cmd/mmkd").CombinedOutput(); err != nil {
			return fmt.Errorf("build mmkd: %w\n%s", err, out)
		}
	}
	data, want, err := loadTemplate(c.template, sw.template)
	if err != nil {
		return err
	}
	used, err := usedBytes(sw.template)
	if err != nil {
		return err
	}
	if used < minStore {
		return fmt.Errorf("the template store %s uses %d bytes, less than 1 MiB: -rebuild it with more jobs", c.template, used)
	}
	// Flips fall in the pages the store uses, not in the room bbolt
	// grew the file by.
	sw.used = used
	js, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("the template's jobs: %w", err)
	}
	if err := os.WriteFile(sw.jobsFile, js, 0o600); err != nil {
		return fmt.Errorf("the template's jobs: %w", err)
	}
	if sw.cache, err = trainOnce(sw.bin, filepath.Join(tmp, "train")); err != nil {
		return err
	}
	st := describe(want, used, len(data))
	log.Printf("store: %s; %d cases, %d at once", st, len(cases), c.parallel)

	results := make([]result, len(cases))
	prog := progress.New(os.Stderr)
	start := time.Now()
	var mu sync.Mutex
	done, bad := 0, 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range c.parallel {
		wg.Go(func() {
			for i := range next {
				r := sw.one(data, cases[i].flips, cases[i].seed)
				mu.Lock()
				results[i] = r
				done++
				if !clean(r) {
					bad++
				}
				prog.Updatef(done, len(cases), "%d/%d cases, %d not clean, %s", done, len(cases), bad, time.Since(start).Round(time.Second))
				mu.Unlock()
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)

	if c.jsonl != "" {
		if err := writeLines(c.jsonl, results); err != nil {
			return err
		}
	}
	var before []result
	if c.before != "" {
		if before, err = readLines(c.before); err != nil {
			return err
		}
	}
	md := report(c, st, results, before, took)
	if c.md == "" {
		fmt.Print(md)
		return nil
	}
	if err := os.WriteFile(c.md, []byte(md), 0o644); err != nil {
		return fmt.Errorf("the report: %w", err)
	}
	return nil
}

// cases lists the starts the flags ask for.
func (c config) cases() ([]caseID, error) {
	if c.only != "" {
		var out []caseID
		for _, s := range strings.Split(c.only, ",") {
			f, sd, ok := strings.Cut(s, ":")
			n, err1 := strconv.Atoi(f)
			seed, err2 := strconv.ParseUint(sd, 10, 64)
			if !ok || err1 != nil || err2 != nil || n <= 0 {
				return nil, fmt.Errorf("-only %q: want FLIPS:SEED", s)
			}
			out = append(out, caseID{n, seed})
		}
		return out, nil
	}
	var out []caseID
	for _, f := range strings.Split(c.flips, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-flips %q: %q is not a count", c.flips, f)
		}
		for seed := uint64(1); seed <= uint64(c.seeds); seed++ {
			out = append(out, caseID{n, seed})
		}
	}
	return out, nil
}

// trainOnce starts mmkd on an empty data directory until it is ready,
// so that it trains its predictor and caches it, and returns the
// cache's path: each case starts with a copy, as a restart does.
func trainOnce(bin, dir string) (string, error) {
	sw := &sweep{bound: 2 * time.Minute}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	cmd := exec.Command(bin, "--backend", "fake", "--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error")
	cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=false")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cache := filepath.Join(dir, predictor.CacheFile)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("train: start mmkd: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t0 := time.Now()
	for time.Since(t0) < sw.bound {
		if _, err := os.Stat(cache); err == nil {
			time.Sleep(200 * time.Millisecond) // written atomically
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
			return cache, nil
		}
		select {
		case err := <-done:
			return "", fmt.Errorf("train: mmkd ended (%v) before it cached its predictor:\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	<-done
	return "", errors.New("train: mmkd did not cache its predictor within 2 min")
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// writeLines writes the results as JSON lines.
func writeLines(path string, results []result) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// readLines reads the results of an earlier run.
func readLines(path string) ([]result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("earlier results: %w", err)
	}
	var out []result
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, fmt.Errorf("earlier results %s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, nil
}
