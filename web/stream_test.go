package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/node"
)

// sseEvent is one server-sent event; a comment line is name ":".
type sseEvent struct {
	name, data string
}

// sseClient reads a stream's events on a goroutine.
type sseClient struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openStream connects to ts's stream with query and header (name, value
// pairs); it fails the test unless the answer is 200.
func openStream(t *testing.T, srv *httptest.Server, query string, header ...string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/stream"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream%s = %d %s", query, resp.StatusCode, b)
	}
	c := &sseClient{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	go func() {
		defer close(c.events)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.name != "" {
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				c.events <- sseEvent{name: ":", data: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data += line[len("data: "):]
			}
		}
	}()
	return c
}

// next returns the next event named name (skipping others), failing
// after a generous timeout.
func (c *sseClient) next(t *testing.T, name string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("the stream ended before a %q event", name)
			}
			if ev.name == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event in 10 s", name)
		}
	}
}

// ended waits until the stream's body ends.
func (c *sseClient) ended(t *testing.T) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-c.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end")
		}
	}
}

// streamServer is a test server whose stream sends updates at most every
// gap, the schedulers every 20 ms and a heartbeat every beat, served over
// real HTTP (the stream needs a connection that can go away). The pace
// is set before the server starts: its handlers read it.
func streamServer(t *testing.T, gap, beat time.Duration, edit ...func(*Options)) (*testServer, *httptest.Server) {
	t.Helper()
	ts := newTestServer(t, edit...)
	ts.streamGap, ts.streamSched, ts.streamBeat = gap, 20*time.Millisecond, beat
	srv := httptest.NewServer(ts.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts, srv
}

func plan(layout string) node.PlanView {
	return node.PlanView{Decisions: 3, GPUs: []node.GPUView{{Index: 0, Model: "H100-80GB", MIG: true, Layout: layout,
		Instances: []node.InstanceView{{Index: 0, Key: "gpu0-3g.40gb-at0", Profile: "3g.40gb", Start: 0, Size: 4, ComputeSlices: 3,
			Jobs: []node.PlacedView{{ID: "x", Name: "a", Percent: 50}}}}}}}
}

// TestStreamSnapshot checks the first message: the plan, the newest N
// jobs with the counts of all, the reconfigurations and the schedulers.
func TestStreamSnapshot(t *testing.T) {
	ts, srv := streamServer(t, 20*time.Millisecond, time.Hour)
	for i := range 5 {
		ts.submit(t, fmt.Sprintf(`{"name":"job-%d","command":["true"]}`, i))
	}
	list, _ := ts.node.Jobs(nodeFilterAll)
	if err := ts.node.SetState(list[0].ID, jobs.Running, "started"); err != nil {
		t.Fatal(err)
	}
	ts.node.SetPlan(plan("3g.40gb@0"))
	ts.node.AddReconfig(jobs.Reconfig{GPU: 0, Cause: "arrival of job x", From: "", To: "3g.40gb@0"})
	ts.node.SetSchedulers([]node.SchedView{{Instance: "gpu0-3g.40gb-at0", Policy: "fikit", Counters: server.Counters{Kernels: 7}}})

	tests := []struct {
		query    string
		wantJobs int
	}{
		{"", 5}, // default 200
		{"?jobs=2", 2},
		{"?jobs=0", 0},
		{"?jobs=5000", 5},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			c := openStream(t, srv, tt.query)
			if ct := c.resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type %q", ct)
			}
			data := c.next(t, "snapshot").data
			var snap streamSnapshot
			if err := json.Unmarshal([]byte(data), &snap); err != nil {
				t.Fatal(err)
			}
			// Lists are [], never null: the page iterates them.
			if !strings.Contains(data, `"tasks":[]`) || !strings.Contains(data, `"timeline":[]`) || strings.Contains(data, "null") {
				t.Errorf("snapshot with null lists: %s", data)
			}
			if len(snap.Jobs) != tt.wantJobs || snap.Jobs == nil {
				t.Errorf("%d jobs (%v), want %d", len(snap.Jobs), snap.Jobs == nil, tt.wantJobs)
			}
			if tt.wantJobs > 0 && snap.Jobs[0].Spec.Name != "job-4" {
				t.Errorf("first job %q, want the newest (job-4)", snap.Jobs[0].Spec.Name)
			}
			if snap.Total != 5 || snap.Counts[jobs.Pending] != 4 || snap.Counts[jobs.Running] != 1 || len(snap.Counts) != len(jobs.States()) {
				t.Errorf("total %d, counts %v", snap.Total, snap.Counts)
			}
			if len(snap.Plan.GPUs) != 1 || snap.Plan.GPUs[0].Layout != "3g.40gb@0" || snap.Plan.Waiting == nil {
				t.Errorf("plan %+v", snap.Plan)
			}
			if len(snap.Reconfigs) != 1 || snap.Reconfigs[0].Cause != "arrival of job x" {
				t.Errorf("reconfigs %+v", snap.Reconfigs)
			}
			if len(snap.Schedulers) != 1 || snap.Schedulers[0].Counters.Kernels != 7 {
				t.Errorf("schedulers %+v", snap.Schedulers)
			}
			if time.Since(snap.Time) > time.Minute {
				t.Errorf("time %v", snap.Time)
			}
		})
	}
}

// TestStreamBadRequest checks that the stream's query is checked like
// any other, and that it needs a node.
func TestStreamBadRequest(t *testing.T) {
	ts := newTestServer(t)
	for _, q := range []string{"?jobs=-1", "?jobs=x", "?jobs=5001", "?limit=3", "?jobs=1&jobs=2"} {
		if r := ts.do(t, "GET", "/api/v1/stream"+q, ""); r.code != 400 {
			t.Errorf("stream%s = %d %s", q, r.code, r.body)
		}
	}
	if code, body := get(t, newServer(t).Handler(), "/api/v1/stream"); code != 503 {
		t.Errorf("stream without a node = %d %s", code, body)
	}
}

// TestStreamUpdates checks what follows the snapshot: each change is
// sent once, with the jobs that changed (old ones included) and nothing
// else.
func TestStreamUpdates(t *testing.T) {
	ts, srv := streamServer(t, 20*time.Millisecond, time.Hour)
	old := ts.submit(t, `{"name":"old","command":["true"]}`)
	for i := range 3 {
		ts.submit(t, fmt.Sprintf(`{"name":"filler-%d","command":["true"]}`, i))
	}
	// The snapshot holds only the newest job: "old" is not in it.
	c := openStream(t, srv, "?jobs=1")
	c.next(t, "snapshot")

	tests := []struct {
		name   string
		change func(t *testing.T)
		event  string
		check  func(t *testing.T, data string)
	}{
		{"a job left out of the snapshot changes", func(t *testing.T) {
			if err := ts.node.SetState(old.ID, jobs.Running, "started"); err != nil {
				t.Fatal(err)
			}
		}, "jobs", func(t *testing.T, data string) {
			m := decode[streamJobs](t, data)
			if len(m.Jobs) != 1 || m.Jobs[0].ID != old.ID || m.Jobs[0].State != jobs.Running || m.Counts[jobs.Running] != 1 || m.Total != 4 || m.More {
				t.Errorf("update %s", data)
			}
		}},
		{"a job is submitted", func(t *testing.T) {
			ts.submit(t, `{"name":"new","command":["true"]}`)
		}, "jobs", func(t *testing.T, data string) {
			m := decode[streamJobs](t, data)
			if len(m.Jobs) != 1 || m.Jobs[0].Spec.Name != "new" || m.Total != 5 {
				t.Errorf("update %s", data)
			}
		}},
		{"the plan changes", func(t *testing.T) {
			ts.node.SetPlan(plan("4g.40gb@0"))
		}, "plan", func(t *testing.T, data string) {
			if p := decode[node.PlanView](t, data); len(p.GPUs) != 1 || p.GPUs[0].Layout != "4g.40gb@0" {
				t.Errorf("plan %s", data)
			}
		}},
		{"a reconfiguration is recorded", func(t *testing.T) {
			ts.node.AddReconfig(jobs.Reconfig{Cause: "completion of job y", Steps: []string{"destroy GPU instance 3g.40gb@0"}, Duration: 1500 * time.Millisecond})
			if err := ts.node.SetState(old.ID, jobs.Succeeded, "exit 0"); err != nil {
				t.Fatal(err)
			}
		}, "reconfigs", func(t *testing.T, data string) {
			rs := decode[[]jobs.Reconfig](t, data)
			if len(rs) != 1 || rs[0].Cause != "completion of job y" || rs[0].Seq != 1 || !strings.Contains(data, `"durationNs":1500000000`) {
				t.Errorf("reconfigs %s", data)
			}
		}},
		{"the kernel schedulers change", func(t *testing.T) {
			ts.node.SetSchedulers([]node.SchedView{{Instance: "gpu2", Policy: "mmk", Queues: [10]int{0, 0, 0, 0, 0, 4},
				Tasks:    []server.TaskView{{Name: "train", Priority: 5, Held: 4}},
				Timeline: []server.Span{{Task: "train", Priority: 5, Start: time.Now().Add(-time.Second), End: time.Now(), Kernels: 9}}}})
		}, "kernelsched", func(t *testing.T, data string) {
			m := decode[streamSched](t, data)
			if len(m.Schedulers) != 1 || m.Schedulers[0].Queues[5] != 4 || len(m.Schedulers[0].Timeline) != 1 || m.Time.IsZero() {
				t.Errorf("kernelsched %s", data)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change(t)
			tt.check(t, c.next(t, tt.event).data)
		})
	}
	// Nothing changed since: no update follows, only the schedulers'
	// ticks, which send nothing when they did not change.
	select {
	case ev := <-c.events:
		t.Errorf("unexpected event %s %s", ev.name, ev.data)
	case <-time.After(150 * time.Millisecond):
	}
}

// TestStreamCoalesces checks that a burst of changes is sent in few
// messages (one per gap at most: more would mean it was not coalesced),
// and that every job of it is sent.
func TestStreamCoalesces(t *testing.T) {
	ts, srv := streamServer(t, 200*time.Millisecond, time.Hour)
	c := openStream(t, srv, "")
	c.next(t, "snapshot")
	start := time.Now()
	for i := range 50 {
		ts.submit(t, fmt.Sprintf(`{"name":"burst-%d","command":["true"]}`, i))
	}
	submitted := time.Since(start)
	seen := map[string]bool{}
	messages := 0
	for len(seen) < 50 {
		m := decode[streamJobs](t, c.next(t, "jobs").data)
		messages++
		for _, j := range m.Jobs {
			seen[j.ID] = true
		}
	}
	// Messages go on the streams' beat, one per gap: two or three for a
	// burst shorter than one gap.
	if limit := 2 + int(submitted/ts.streamGap); messages > limit+1 {
		t.Errorf("%d messages for a burst of 50 in %v, want at most %d", messages, submitted, limit+1)
	}
}

// TestStreamLargeBurst checks that a burst larger than one message holds
// is sent over several, newest first, each flagged until the last.
func TestStreamLargeBurst(t *testing.T) {
	// A long gap, and the burst submitted just after a beat: it is
	// submitted while the stream waits for the next one.
	ts, srv := streamServer(t, 3*time.Second, time.Hour)
	c := openStream(t, srv, "")
	c.next(t, "snapshot")
	time.Sleep(nextBeat(time.Now(), ts.streamGap) + 10*time.Millisecond)
	n := maxStreamBatch + 100
	for i := range n {
		ts.submit(t, fmt.Sprintf(`{"name":"b-%d","command":["true"]}`, i))
	}
	seen := map[string]bool{}
	var sizes []int
	var more []bool
	for len(seen) < n {
		m := decode[streamJobs](t, c.next(t, "jobs").data)
		sizes = append(sizes, len(m.Jobs))
		more = append(more, m.More)
		for _, j := range m.Jobs {
			if seen[j.ID] {
				t.Fatalf("job %s sent twice", j.ID)
			}
			seen[j.ID] = true
		}
	}
	// A message flagged "more" is full; the last is not flagged.
	for i, sz := range sizes {
		if sz > maxStreamBatch || more[i] && sz != maxStreamBatch || i == len(sizes)-1 && more[i] {
			t.Errorf("message %d: %d jobs, more %v (sizes %v, more %v)", i, sz, more[i], sizes, more)
		}
	}
	if len(sizes) < 2 || !more[0] {
		t.Errorf("a burst of %d jobs sent as %v (more %v), want a full message flagged more first", n, sizes, more)
	}
}

// TestStreamToken checks that the stream asks for the token as the
// rest of the API does.
func TestStreamToken(t *testing.T) {
	_, srv := streamServer(t, 20*time.Millisecond, time.Hour, func(o *Options) { o.Token = "s3cret" })
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"not bearer", "Basic czNjcmV0", http.StatusUnauthorized},
		{"the token", "Bearer s3cret", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/stream", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusOK {
				line, _ := bufio.NewReader(resp.Body).ReadString('\n')
				if line != "retry: 2000\n" {
					t.Errorf("first line %q", line)
				}
			}
		})
	}
}

// TestStreamEnds checks that a stream ends when the server closes and
// when its client goes away, and that the heartbeat is sent meanwhile.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(ts *testServer, c *sseClient)
	}{
		{"server closes", func(ts *testServer, _ *sseClient) { ts.Close() }},
		{"client goes away", func(_ *testServer, c *sseClient) { c.cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, srv := streamServer(t, 20*time.Millisecond, 10*time.Millisecond)
			c := openStream(t, srv, "")
			c.next(t, "snapshot")
			if hb := c.next(t, ":"); hb.data != "heartbeat" {
				t.Errorf("heartbeat %q", hb.data)
			}
			if n := ts.streams.Load(); n != 1 {
				t.Errorf("%d streams served, want 1", n)
			}
			tt.end(ts, c)
			c.ended(t)
			deadline := time.Now().Add(10 * time.Second)
			for ts.streams.Load() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the stream's handler did not return")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
