// Command restart measures mmkd's restart to ready on the fake backend:
// the time from starting the mmkd process to its /readyz answering 200,
// the median of -n separate starts on one data directory (after a first
// start, which makes the token and the predictor's cache), and the same
// with the cache removed before each start (every start trains, as
// before issue 38). With -store, each start finds a copy of that job
// store (an mmk.db, e.g. one a kill sweep left) in the data directory:
// the restart of a node with that history; with -jobs N, a store of N
// queued jobs made for the run (as a kill sweep leaves: `true` jobs of
// mmkd's own user, each with an idempotency key), one size or several.
//
//	go run ./bench/restart -n 20
//	go run ./bench/restart -n 10 -store /tmp/ks/data/mmk.db
//	go run ./bench/restart -n 7 -jobs 1000,5000,10000,30000
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/bench/internal/fakemmkd"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/predictor"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("restart: ")
	n := flag.Int("n", 20, "starts measured")
	bin := flag.String("mmkd", "", "mmkd binary (default: built from ./cmd/mmkd)")
	store := flag.String("store", "", "a job store (mmk.db) copied into the data directory before each start")
	sizes := flag.String("jobs", "", "comma-separated: for each, a store of that many queued jobs is made and measured as -store is")
	flag.Parse()
	if *sizes == "" {
		if err := measure(*n, *bin, *store); err != nil {
			log.Fatal(err)
		}
		return
	}
	for _, f := range strings.Split(*sizes, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 0 {
			log.Fatalf("-jobs %q: want counts of jobs, such as 1000,30000", *sizes)
		}
		path, err := queuedStore(k)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("store of %d queued jobs:\n", k)
		err = measure(*n, *bin, path)
		os.RemoveAll(filepath.Dir(path))
		if err != nil {
			log.Fatal(err)
		}
	}
}

// queuedStore makes a job store of n queued jobs in a temporary
// directory, each with an idempotency key and its first event, written
// by jobs.Store itself (concurrent creates share commits).
func queuedStore(n int) (string, error) {
	dir, err := os.MkdirTemp("", "mmk-restart-store-")
	if err != nil {
		return "", fmt.Errorf("-jobs: %w", err)
	}
	path := filepath.Join(dir, "mmk.db")
	s, err := jobs.OpenStore(path)
	if err != nil {
		return "", fmt.Errorf("-jobs: %w", err)
	}
	owner := jobs.Self()
	now := time.Now().UTC()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	next := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				key := fmt.Sprintf("restart-%d", i)
				j := jobs.Job{ID: jobs.NewID(now), Spec: jobs.Spec{Name: key, Command: []string{"true"}, Kind: jobs.Offline}, Priority: 5, MemoryMiB: 4096,
					TaskKey: key, State: jobs.Pending, Owner: &owner, IdempotencyKey: key, CreatedAt: now, UpdatedAt: now}
				if _, _, err := s.Create(j); err != nil {
					select {
					case errs <- err:
					default: // one is enough to say
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		s.Close()
		return "", fmt.Errorf("-jobs: %w", err)
	}
	if err := s.Close(); err != nil {
		return "", fmt.Errorf("-jobs: %w", err)
	}
	return path, nil
}

func measure(n int, bin, store string) error {
	tmp, err := os.MkdirTemp("", "mmk-restart-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "mmkd")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/mmkd").CombinedOutput(); err != nil {
			return fmt.Errorf("build mmkd: %w\n%s", err, out)
		}
	}
	data := filepath.Join(tmp, "data")
	start := func(bin, data string) (time.Duration, error) {
		if store != "" {
			if err := copyStore(store, data); err != nil {
				return 0, err
			}
		}
		return startOnce(bin, data)
	}
	first, err := start(bin, data)
	if err != nil {
		return err
	}
	fmt.Printf("first start (trains, writes the cache): %v\n", first.Round(time.Millisecond))
	for _, cached := range []bool{true, false} {
		var times []time.Duration
		for range n {
			if !cached {
				if err := os.Remove(filepath.Join(data, predictor.CacheFile)); err != nil {
					return fmt.Errorf("remove the predictor cache: %w", err)
				}
			}
			d, err := start(bin, data)
			if err != nil {
				return err
			}
			times = append(times, d)
		}
		slices.Sort(times)
		what := "cache loaded"
		if !cached {
			what = "cache removed, trained"
		}
		fmt.Printf("restart to ready, %s: median %v of %d (min %v, max %v)\n", what,
			times[len(times)/2].Round(time.Millisecond), n, times[0].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	return nil
}

// copyStore puts a copy of the store at src in data as its mmk.db, its
// backup removed (a start would otherwise put back records from it) and
// the job directories the last start made too (it started jobs the copy
// holds as queued: the next would adopt them).
func copyStore(src, data string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("-store: %w", err)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("-store: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(data, "jobs")); err != nil {
		return fmt.Errorf("-store: %w", err)
	}
	dst := filepath.Join(data, "mmk.db")
	if err := os.Remove(dst + jobs.BackupSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("-store: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("-store: %w", err)
	}
	return nil
}

// startOnce runs mmkd on data until /readyz answers 200, stops it, and
// returns how long it took to be ready.
func startOnce(bin, data string) (time.Duration, error) {
	d, err := fakemmkd.New(bin, data)
	if err != nil {
		return 0, err
	}
	d.LogLevel = "error"
	ready, err := d.Start()
	d.Stop()
	return ready, err
}
