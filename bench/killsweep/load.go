package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/bench/internal/fakemmkd"
	"github.com/mmkgpu/mmk/jobs"
)

// load is the sweep's clients: each submits jobs one after another,
// every submission with a key of its own, sent again (same key) until
// mmkd answers it.
type load struct {
	d    *fakemmkd.Daemon
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	accepted map[string]string // key -> the id mmkd answered
	retries  int               // requests sent again after a failure
	refused  map[int]int       // answers other than 2xx, by status
}

func newLoad(d *fakemmkd.Daemon) *load {
	return &load{d: d, stop: make(chan struct{}), accepted: map[string]string{}, refused: map[int]int{}}
}

// run starts n clients.
func (l *load) run(n int) {
	for w := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := &http.Client{Timeout: 5 * time.Second}
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.submit(c, fmt.Sprintf("ks-%d-%d", w, k))
			}
		}()
	}
}

// halt stops the clients after their submissions in flight.
func (l *load) halt() {
	close(l.stop)
	l.wg.Wait()
}

// submit sends one job until mmkd answers it with its id, or the load
// stops (a submission mmkd may have taken but never answered is not
// counted as accepted).
func (l *load) submit(c *http.Client, key string) {
	body, _ := json.Marshal(map[string]any{"command": []string{"true"}, "name": key})
	for try := 0; ; try++ {
		if try > 0 {
			l.mu.Lock()
			l.retries++
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		tok, err := l.d.Token()
		if err != nil {
			continue
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+l.d.Addr+"/api/v1/jobs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			continue // killed under it: the same request again
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			l.mu.Lock()
			l.refused[resp.StatusCode]++
			l.mu.Unlock()
			continue
		}
		var j jobs.Job
		if err := json.Unmarshal(b, &j); err != nil || j.ID == "" {
			continue
		}
		l.mu.Lock()
		l.accepted[key] = j.ID
		l.mu.Unlock()
		return
	}
}
