// Command restart measures mmkd's restart to ready on the fake backend:
// the time from starting the mmkd process to its /readyz answering 200,
// the median of -n separate starts on one data directory (after a first
// start, which makes the token and the predictor's cache), and the same
// with the cache removed before each start (every start trains, as
// before issue 38). With -store, each start finds a copy of that job
// store (an mmk.db, e.g. one a kill sweep left) in the data directory:
// the restart of a node with that history.
//
//	go run ./bench/restart -n 20
//	go run ./bench/restart -n 10 -store /tmp/ks/data/mmk.db
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
	flag.Parse()
	if err := measure(*n, *bin, *store); err != nil {
		log.Fatal(err)
	}
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
