// Command apiload measures mmkd's job submission over HTTP on loopback:
// submissions per second and their latency (p50, p99, max), every one
// written to the durable job store (bbolt, fsynced) before it is
// answered.
//
//	go run ./bench/apiload                       # an mmkd in this process: fake GPUs, a fresh data directory
//	go run ./bench/apiload -addr 127.0.0.1:7070  # a running mmkd (its jobs stay in its store)
//
// -clients concurrent HTTP clients (keep-alive) submit for -duration,
// each its next job as soon as the last is answered, while -streams
// clients hold the live stream (/api/v1/stream, as dashboards do) open
// and read it. -preload submits that many jobs first, unmeasured (a node
// with a long history). -compare measures -rounds pairs of runs, without
// streams and with -streams, alternating, and prints the median of the
// pairs' ratios of submits/s. The in-process mmkd's peak resident memory (VmHWM)
// is printed at the end. The submitted jobs
// ask for 100 GiB of GPU memory, so that on the fake GPUs of the
// in-process mmkd one runs (a `sleep`, cancelled at the end) and the rest
// wait: the placement loop decides on every burst, but no host is flooded
// with processes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/data"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/web"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(jobs.ShimMain(os.Args[2:]))
	}
	addr := flag.String("addr", "", "a running mmkd (host:port); empty: start one in this process")
	clients := flag.Int("clients", 32, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Second, "how long to submit")
	token := flag.String("token", os.Getenv("MMK_TOKEN"), "bearer token of the mmkd")
	streams := flag.Int("streams", 0, "clients that hold /api/v1/stream open while the others submit")
	preload := flag.Int("preload", 0, "jobs to submit before measuring")
	compare := flag.Bool("compare", false, "measure without streams and with -streams, alternating, and print the ratio")
	rounds := flag.Int("rounds", 3, "pairs of runs of -compare")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (in-process mmkd included) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *clients < 1 || *duration <= 0 || *streams < 0 || *preload < 0 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "apiload: -clients and -rounds must be at least 1, -duration positive, -streams and -preload not negative")
		os.Exit(2)
	}
	target := *addr
	if target == "" {
		a, stop, err := startMMKD()
		if err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
		defer stop()
		target = a
	}
	if *preload > 0 {
		if err := submitN(target, *token, *clients, *preload); err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
	}
	if *compare {
		c, err := compareStreams(target, *token, *clients, *streams, *rounds, *duration)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
		fmt.Print(c)
	} else {
		r, err := loadWithStreams(target, *token, *clients, *streams, *duration)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apiload:", err)
			os.Exit(1)
		}
		fmt.Print(r)
	}
	if *addr == "" {
		fmt.Printf("peak resident memory of this process (load generator and mmkd): %d MiB\n", peakRSS()>>20)
	}
}

// startMMKD serves a node on fake GPUs from a fresh data directory on a
// loopback port, as mmkd does.
func startMMKD() (string, func(), error) {
	dir, err := os.MkdirTemp("", "mmk-apiload-")
	if err != nil {
		return "", nil, err
	}
	log := slog.New(slog.DiscardHandler)
	backend, err := nvmlbackend.Open(nvmlbackend.Options{Kind: "fake", FakeSeed: 1, FakeGPUs: []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4"}, {Model: "H200-141GB"}}})
	if err != nil {
		return "", nil, err
	}
	store, err := jobs.OpenStore(filepath.Join(dir, "mmk.db"))
	if err != nil {
		return "", nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	runner, err := jobs.NewRunner(jobs.RunnerOptions{Root: filepath.Join(dir, "jobs"), ShimPath: exe, ShimArgs: []string{"shim"}, Logger: log})
	if err != nil {
		return "", nil, err
	}
	_, samples, err := data.Samples()
	if err != nil {
		return "", nil, err
	}
	est, err := predictor.TrainEstimator(samples, predictor.DefaultForest(0).Seed)
	if err != nil {
		return "", nil, err
	}
	// The jobs run as whoever runs apiload, root too.
	n, err := node.New(node.Config{Backend: backend, Store: store, Runner: runner,
		Estimator: node.NewEstimator(est), AllowRoot: true,
		BaseEnv: node.BaseEnv(), Log: log})
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return "", nil, err
	}
	api := web.New(web.Options{Backend: backend, Node: n, Log: log, MaxStreams: 1024})
	srv := web.NewHTTPServer(api.Handler())
	go func() { _ = srv.Serve(ln) }()
	for n.Ready(ctx) != nil {
		time.Sleep(time.Millisecond)
	}
	return ln.Addr().String(), func() {
		api.Close()
		_ = srv.Close()
		cancel()
		<-done
		// Jobs outlive mmkd: with its loop stopped (nothing new starts),
		// end the ones that run. The data directory goes, so the store
		// need not know.
		running, _ := n.Jobs(node.JobFilter{States: []jobs.State{jobs.Placed, jobs.Running}})
		for _, j := range running {
			if err := runner.Stop(j.ID, time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "apiload: stop job", j.ID, err)
			}
			<-runner.Wait(context.Background(), j.ID)
		}
		store.Close()
		backend.Close()
		os.RemoveAll(dir)
	}, nil
}

// result is one load run.
type result struct {
	clients, streams int
	duration         time.Duration
	ok, failed       int
	p50, p99, pmax   time.Duration
	firstFailure     string
	submitsPerSecond float64
	// perCPUSecond is submissions per second of CPU the process spent
	// (set by loadWithStreams).
	perCPUSecond float64
}

func (r result) String() string {
	s := fmt.Sprintf("| clients | streams | submits | failed | submits/s | p50 | p99 | max |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n| %d | %d | %d | %d | %.0f | %.2f ms | %.2f ms | %.2f ms |\n",
		r.clients, r.streams, r.ok, r.failed, r.submitsPerSecond, ms(r.p50), ms(r.p99), ms(r.pmax))
	if r.firstFailure != "" {
		s += "first failure: " + r.firstFailure + "\n"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// load submits from clients concurrent clients for d.
func load(addr, token string, clients int, d time.Duration) (result, error) {
	client := newClient(clients)
	defer client.CloseIdleConnections()
	url := jobsURL(addr)
	body, err := json.Marshal(jobs.Spec{Name: "apiload", Command: []string{"sleep", "3600"}, Kind: jobs.Offline, MemoryMiB: 100 << 10})
	if err != nil {
		return result{}, err
	}
	var mu sync.Mutex
	var lat []time.Duration
	r := result{clients: clients, duration: d}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			failed, first := 0, ""
			for time.Now().Before(end) {
				took, err := submitOne(client, url, token, body)
				if err != nil {
					failed++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				mine = append(mine, took)
			}
			mu.Lock()
			lat = append(lat, mine...)
			r.failed += failed
			if r.firstFailure == "" {
				r.firstFailure = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(lat) == 0 {
		return r, fmt.Errorf("no submission succeeded (first failure: %s)", r.firstFailure)
	}
	slices.Sort(lat)
	r.ok = len(lat)
	r.p50, r.p99, r.pmax = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)], lat[len(lat)-1]
	r.submitsPerSecond = float64(r.ok) / elapsed.Seconds()
	return r, nil
}
