package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/bench/internal/fakemmkd"
	"github.com/mmkgpu/mmk/jobs"
)

// config is a sweep's settings (the flags).
type config struct {
	kills, workers int
	every, settle  time.Duration
	seed           uint64
	bin, data      string
}

// result is what a sweep found.
type result struct {
	kills                     int
	ready                     []time.Duration // restart to ready, per start after a kill
	accepted, held            int
	lost, duplicated, stuck   []string
	retries                   int
	refused                   map[int]int
	elapsed                   time.Duration
	states                    map[jobs.State]int
	firstReady, settledWithin time.Duration
	// drained counts the jobs that ended after the last start; queued,
	// those queued then that have not ended yet; stalled says none ended
	// for -settle.
	drained, queued int
	stalled         bool
}

func (r *result) ok() bool { return len(r.lost)+len(r.duplicated)+len(r.stuck) == 0 }

// sweep runs the kills under load, then checks every job.
func sweep(cfg config, progress io.Writer) (*result, error) {
	d, err := fakemmkd.New(cfg.bin, cfg.data)
	if err != nil {
		return nil, err
	}
	d.LogDir = filepath.Dir(cfg.data) // one log a start, beside the data
	defer d.Stop()
	r := &result{}
	if r.firstReady, err = d.Start(); err != nil {
		return nil, err
	}
	l := newLoad(d)
	t0 := time.Now()
	l.run(cfg.workers)
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6b11))
	for k := range cfg.kills {
		time.Sleep(cfg.every/2 + time.Duration(rng.Int64N(int64(cfg.every))))
		if err := d.Kill(); err != nil {
			l.halt()
			return nil, err
		}
		ready, err := d.Start()
		if err != nil {
			l.halt()
			return nil, err
		}
		r.kills++
		r.ready = append(r.ready, ready)
		l.mu.Lock()
		n := len(l.accepted)
		l.mu.Unlock()
		fmt.Fprintf(progress, "killsweep: kill %d of %d, ready again in %v, %d submissions accepted\n", k+1, cfg.kills, ready.Round(time.Millisecond), n)
	}
	l.halt()
	r.elapsed = time.Since(t0)
	r.accepted, r.retries, r.refused = len(l.accepted), l.retries, l.refused
	// The jobs' last start: each only runs `true`, so each ends soon.
	d.Stop()
	if _, err := d.Start(); err != nil {
		return nil, err
	}
	// Every job that was under way at the last start (placed, running,
	// restarting, cancelled while running) must end, and the queue must
	// move (queuedMoves more jobs end); the jobs still queued then are
	// counted, not waited for (they start one after another). A job not
	// ended when none has for -settle is stuck.
	all, err := list(d)
	if err != nil {
		return nil, err
	}
	underway := map[string]bool{}
	first := 0
	for _, j := range all {
		switch {
		case j.State.Terminal():
			first++
		case j.State != jobs.Pending:
			underway[j.ID] = true
		}
	}
	settleFrom, lastEnd, ended := time.Now(), time.Now(), first
	for {
		if all, err = list(d); err != nil {
			return nil, err
		}
		n, left := 0, 0
		for _, j := range all {
			if j.State.Terminal() {
				n++
			} else if underway[j.ID] {
				left++
			}
		}
		if n != ended {
			ended, lastEnd = n, time.Now()
		}
		moved := n-first >= queuedMoves || n == len(all)
		if left == 0 && moved {
			break
		}
		if time.Since(lastEnd) > cfg.settle {
			r.stalled = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.settledWithin = time.Since(settleFrom)
	r.drained = ended - first
	r.check(l.accepted, all, underway)
	return r, nil
}

// queuedMoves is how many jobs must end after the last start for the
// queue to count as moving.
const queuedMoves = 50

// check compares the jobs mmkd holds with what its clients were told.
func (r *result) check(accepted map[string]string, all []jobs.Job, underway map[string]bool) {
	byID := map[string]jobs.Job{}
	byKey := map[string][]string{}
	r.states = map[jobs.State]int{}
	for _, j := range all {
		byID[j.ID] = j
		if j.IdempotencyKey != "" {
			byKey[j.IdempotencyKey] = append(byKey[j.IdempotencyKey], j.ID)
		}
		r.states[j.State]++
		switch {
		case j.State.Terminal():
		case r.stalled || underway[j.ID]:
			r.stuck = append(r.stuck, j.ID+" ("+string(j.State)+")")
		default:
			r.queued++ // queued at the last start, and under way or queued now
		}
	}
	r.held = len(all)
	for key, id := range accepted {
		if _, ok := byID[id]; !ok {
			r.lost = append(r.lost, id+" (key "+key+")")
		}
	}
	for key, ids := range byKey {
		if len(ids) > 1 {
			r.duplicated = append(r.duplicated, key+": "+strings.Join(ids, ", "))
		}
	}
	slices.Sort(r.lost)
	slices.Sort(r.duplicated)
	slices.Sort(r.stuck)
}

// list reads every job mmkd holds, page by page.
func list(d *fakemmkd.Daemon) ([]jobs.Job, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 30 * time.Second}
	var all []jobs.Job
	before := ""
	for {
		q := url.Values{"limit": {"5000"}}
		if before != "" {
			q.Set("before", before)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+d.Addr+"/api/v1/jobs?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		var page []jobs.Job
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("list jobs: status %d: %v", resp.StatusCode, err)
		}
		all = append(all, page...)
		if len(page) < 5000 {
			return all, nil
		}
		before = page[len(page)-1].ID
	}
}

// markdown is the report.
func (r *result) markdown(cfg config) string {
	var b strings.Builder
	slices.Sort(r.ready)
	med, hi := time.Duration(0), time.Duration(0)
	if n := len(r.ready); n > 0 {
		med, hi = r.ready[n/2], r.ready[n-1]
	}
	fmt.Fprintf(&b, "# mmkd killed with SIGKILL under load\n\n`go run ./bench/killsweep -kills %d -workers %d -every %v -seed %d`: mmkd on the fake backend, %d clients submitting `true` jobs with an Idempotency-Key each (a failed request sent again with its key), SIGKILL every %v on average, started again at once.\n\n",
		cfg.kills, cfg.workers, cfg.every, cfg.seed, cfg.workers, cfg.every)
	fmt.Fprintf(&b, "| kills | submissions answered | jobs held | lost | duplicated | stuck | restart to ready: median (max) | requests sent again | refused answers |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %v (%v) | %d | %s |\n\n", r.kills, r.accepted, r.held, len(r.lost), len(r.duplicated), len(r.stuck),
		med.Round(time.Millisecond), hi.Round(time.Millisecond), r.retries, refusedText(r.refused))
	fmt.Fprintf(&b, "Load ran %v. After the last start every job under way then had ended and %d more had, within %v; the jobs' states then: %s (%d queued at the last start not ended yet: they start one after another; stuck: a job under way that never ended, or any left when none had ended for %v).\n",
		r.elapsed.Round(time.Second), r.drained, r.settledWithin.Round(100*time.Millisecond), statesText(r.states), r.queued, cfg.settle)
	for _, s := range []struct {
		what string
		list []string
	}{{"Lost", r.lost}, {"Duplicated", r.duplicated}, {"Stuck", r.stuck}} {
		if len(s.list) > 0 {
			fmt.Fprintf(&b, "\n%s (%d): %s\n", s.what, len(s.list), strings.Join(s.list[:min(len(s.list), 20)], "; "))
		}
	}
	return b.String()
}

func refusedText(m map[int]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d x%d", code, m[code]))
	}
	return strings.Join(parts, ", ")
}

func statesText(m map[jobs.State]int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", s, m[s]))
	}
	return strings.Join(parts, ", ")
}
