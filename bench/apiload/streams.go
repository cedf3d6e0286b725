package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/internal/stats"
	"github.com/mmkgpu/mmk/jobs"
)

// streamClients hold n live streams open, reading every event, until
// stop is called; stop reports the first stream that failed.
func streamClients(addr, token string, n int) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	ready := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := readStream(ctx, addr, token, ready)
			if err != nil && ctx.Err() == nil {
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
			}
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
	}
	return func() error {
		cancel()
		wg.Wait()
		return failed
	}, nil
}

// readStream reads one stream until ctx ends; it says on ready when the
// snapshot came (or why no stream opened).
func readStream(ctx context.Context, addr, token string, ready chan<- error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/stream", nil)
	if err != nil {
		ready <- err
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ready <- err
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		err := fmt.Errorf("stream: %s %s", resp.Status, b)
		ready <- err
		return err
	}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	for {
		line, err := r.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("event: snapshot")) {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			ready <- err
			return err
		}
	}
	ready <- nil
	// The rest is read as a dashboard's socket would drain it, without
	// the load generator's own parsing: what the comparison weighs is
	// mmkd's work for the streams, not this reader's.
	_, err = io.Copy(io.Discard, r)
	return err
}

// loadWithStreams is load while streams clients hold the stream open.
func loadWithStreams(addr, token string, clients, streams int, d time.Duration) (result, error) {
	stop := func() error { return nil }
	if streams > 0 {
		s, err := streamClients(addr, token, streams)
		if err != nil {
			return result{}, err
		}
		stop = s
	}
	c0 := cpuTime()
	r, err := load(addr, token, clients, d)
	if cpu := cpuTime() - c0; cpu > 0 {
		r.perCPUSecond = float64(r.ok) / cpu.Seconds()
	}
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("a stream failed during the load: %w", serr)
	}
	r.streams = streams
	return r, err
}

// comparison is -compare's outcome: submits/s without streams and with
// them, per round, and the ratio: the median over the rounds of each
// round's ratio (a round's two runs are next to each other in time, so
// that a drift of the machine falls on both). cpuRatio is the same for
// the submissions per second of CPU the process (mmkd and the load
// generator) spent: what the streams cost, whatever else the machine
// runs meanwhile.
type comparison struct {
	streams       int
	without       []float64
	with          []float64
	ratio         float64
	cpuRatio      float64
	withoutMedian float64
	withMedian    float64
}

func (c comparison) String() string {
	f := func(v []float64) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("submits/s without streams: %s (median %.0f)\nsubmits/s with %d streams: %s (median %.0f)\nratio with/without (median of the rounds'): %.3f\nratio of submits per CPU second (median of the rounds'): %.3f\n",
		f(c.without), c.withoutMedian, c.streams, f(c.with), c.withMedian, c.ratio, c.cpuRatio)
}

// compareStreams measures rounds pairs of runs, without streams and with
// them, in alternating order, and the median of the pairs' ratios of
// submits/s.
func compareStreams(addr, token string, clients, streams, rounds int, d time.Duration) (comparison, error) {
	c := comparison{streams: streams}
	var cpuWithout, cpuWith []float64
	for i := range rounds {
		order := []int{0, streams}
		if i%2 == 1 {
			order = []int{streams, 0}
		}
		for _, s := range order {
			r, err := loadWithStreams(addr, token, clients, s, d)
			if err != nil {
				return c, err
			}
			if s == 0 {
				c.without = append(c.without, r.submitsPerSecond)
				cpuWithout = append(cpuWithout, r.perCPUSecond)
			} else {
				c.with = append(c.with, r.submitsPerSecond)
				cpuWith = append(cpuWith, r.perCPUSecond)
			}
		}
	}
	c.withoutMedian, c.withMedian = stats.Median(c.without), stats.Median(c.with)
	ratios, cpuRatios := make([]float64, rounds), make([]float64, rounds)
	for i := range rounds {
		ratios[i] = c.with[i] / c.without[i]
		cpuRatios[i] = cpuWith[i] / cpuWithout[i]
	}
	c.ratio, c.cpuRatio = stats.Median(ratios), stats.Median(cpuRatios)
	return c, nil
}

// submitN submits n jobs from clients clients, unmeasured.
func submitN(addr, token string, clients, n int) error {
	body, err := json.Marshal(jobs.Spec{Name: "preload", Command: []string{"sleep", "3600"}, Kind: jobs.Offline, MemoryMiB: 100 << 10})
	if err != nil {
		return err
	}
	client := newClient(clients)
	defer client.CloseIdleConnections()
	var next sync.WaitGroup
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	errs := make(chan error, clients)
	for range clients {
		next.Add(1)
		go func() {
			defer next.Done()
			for range work {
				if _, err := submitOne(client, jobsURL(addr), token, body); err != nil {
					errs <- fmt.Errorf("preload submit: %w", err)
					return
				}
			}
		}()
	}
	next.Wait()
	close(errs)
	return <-errs
}

// newClient is the HTTP client of clients concurrent submitters: a
// connection each, kept between requests.
func newClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: 30 * time.Second}
}

// jobsURL is the submit endpoint of the mmkd at addr.
func jobsURL(addr string) string { return "http://" + addr + "/api/v1/jobs" }

// submitOne posts one job spec to url; took is the request's round trip
// with its answer read (building the request not included).
func submitOne(client *http.Client, url, token string, body []byte) (took time.Duration, err error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took = time.Since(t0)
	if resp.StatusCode != http.StatusCreated {
		return took, fmt.Errorf("status %d", resp.StatusCode)
	}
	return took, nil
}

// cpuTime is the CPU time this process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is this process's peak resident memory (VmHWM), in bytes; 0
// where /proc cannot tell.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
