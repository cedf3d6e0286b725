package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/node"
)

// The stream's pace. Server fields hold them so that tests can shorten
// them.
const (
	// defaultStreamGap is the least time between two updates of the plan
	// and the jobs: a burst of changes is sent as one message.
	defaultStreamGap = 250 * time.Millisecond
	// defaultStreamSched is how often the kernel schedulers are sent
	// (when they changed): their counters move continuously.
	defaultStreamSched = time.Second
	// defaultStreamBeat is the heartbeat: a comment line that keeps
	// proxies from closing an idle stream and tells the client the
	// daemon is there.
	defaultStreamBeat = 15 * time.Second
	// defaultStreamJobs is how many jobs, newest first, the snapshot
	// holds without ?jobs=N.
	defaultStreamJobs = 200
	// maxStreamBatch bounds the jobs of one update; a larger burst is
	// sent over the next updates, newest first.
	maxStreamBatch = 1000
	// streamReconfigs is how many reconfigurations the snapshot holds.
	streamReconfigs = 50
)

// streamSnapshot is the stream's first message.
type streamSnapshot struct {
	// Time is the daemon's clock: the client draws timelines against it.
	Time       time.Time        `json:"time"`
	Plan       node.PlanView    `json:"plan"`
	Jobs       []jobs.Job       `json:"jobs"`
	jobCounts                   // of every job, not only those sent
	Reconfigs  []jobs.Reconfig  `json:"reconfigs"`
	Schedulers []node.SchedView `json:"schedulers"`
}

// jobCounts are how many jobs the node has, in all and per state (every
// state is present).
type jobCounts struct {
	Total  int                `json:"total"`
	Counts map[jobs.State]int `json:"counts"`
}

// streamJobs is an update of the jobs: those created or changed since
// the last message.
type streamJobs struct {
	Jobs []jobs.Job `json:"jobs"`
	jobCounts
	// More says that more jobs changed than one message holds; the rest
	// follow.
	More bool `json:"more,omitempty"`
}

// streamSched is an update of the kernel schedulers.
type streamSched struct {
	Time       time.Time        `json:"time"`
	Schedulers []node.SchedView `json:"schedulers"`
}

// streamState is what one stream has sent: the version of the jobs' feed
// it has seen (node.JobFeed: an update holds exactly the jobs changed
// since, old ones the snapshot left out included, at a cost that follows
// the changes, not the number of jobs), the plan's and the schedulers'
// versions and the newest reconfiguration.
type streamState struct {
	// cl is who reads the stream: what it may see of the jobs (hide.go).
	cl           caller
	jobsVersion  uint64
	planVersion  uint64
	schedVersion uint64
	reconfigSeq  int
}

// stream serves GET /api/v1/stream?jobs=N: the dashboard's live view as
// server-sent events (text/event-stream). It sends
//
//   - "snapshot" at once: the plan, the newest N jobs (default 200), the
//     job counts, the last reconfigurations and the kernel schedulers;
//   - "plan", "jobs" (the jobs created or changed since the last
//     message, with the counts) and "reconfigs" (the new ones) when the
//     node changes, at most every 250 ms, on a beat all streams share
//     (they then send the same bytes, encoded once);
//   - "kernelsched" every second when the schedulers changed;
//   - a comment line every 15 s as a heartbeat.
//
// Each event's data is one line of JSON. The stream ends when the client
// goes away or the server closes; a client reconnects and gets a new
// snapshot.
func (s *Server) stream(c *gin.Context) {
	q, err := query(c, "jobs")
	if err != nil {
		s.writeError(c, err)
		return
	}
	limit, err := intParam(q, "jobs", 0, MaxListLimit, defaultStreamJobs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if n := s.streams.Add(1); n > s.maxStreams {
		s.streams.Add(-1)
		c.Header("Retry-After", "5")
		s.writeError(c, &apiError{Status: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("mmkd serves at most %d streams at once (server.max_streams); try again later", s.maxStreams)})
		return
	}
	defer s.streams.Add(-1)
	// Taken before the state is read, so that no change is missed.
	changed := s.node.Changed()
	st := &streamState{cl: callerOf(c)}
	snap, err := st.snapshot(s.node, int(limit), &s.shared, s.streamSched/2)
	if err != nil {
		s.writeError(c, err)
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// nginx buffers responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	w := &sseWriter{w: c.Writer, flush: c.Writer.Flush}
	// retry: how long an EventSource waits before reconnecting.
	w.raw("retry: 2000\n\n")
	w.event("snapshot", snap)
	if w.err != nil {
		return
	}

	ctx := c.Request.Context()
	// The schedulers go on a beat too, every stream's at once: they are
	// read and encoded once for all.
	sched := time.NewTimer(nextBeat(time.Now(), s.streamSched))
	defer sched.Stop()
	beat := time.NewTicker(s.streamBeat)
	defer beat.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	for w.err == nil {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-changed:
			// Coalesce: send at the next beat; changes until then join
			// this update.
			changed = nil
			due.Reset(nextBeat(time.Now(), s.streamGap))
		case <-due.C:
			changed = s.node.Changed()
			more, err := st.update(w, s.node, &s.shared, s.streamGap/2)
			if err != nil {
				s.streamFailed(c, err)
				return
			}
			if more {
				// The rest of a large burst follows at the next beat
				// without waiting for another change.
				changed = nil
				due.Reset(nextBeat(time.Now(), s.streamGap))
			}
		case <-sched.C:
			st.schedulers(w, s.node, &s.shared.scheds, s.streamSched/2)
			sched.Reset(nextBeat(time.Now(), s.streamSched))
		case <-beat.C:
			w.raw(": heartbeat\n\n")
		}
	}
}

// streamFailed logs an error met after the stream started: the client
// sees the stream end and reconnects.
func (s *Server) streamFailed(c *gin.Context, err error) {
	if c.Request.Context().Err() != nil {
		return
	}
	s.log.Error("stream", "err", err)
}

// streamShared is what the streams share: the plan, the jobs' updates,
// the last reconfigurations and the schedulers, each read and encoded
// once for the streams that send them together.
type streamShared struct {
	plans   planCache
	batches batchCache
	recent  sharedRecent
	scheds  sharedScheds
}

// snapshot reads the node's state for the first message: the newest
// limit jobs and the counts of all, and records what it sent. fresh is
// how old the shared schedulers may be.
func (st *streamState) snapshot(n Node, limit int, sh *streamShared, fresh time.Duration) (streamSnapshot, error) {
	plan := n.Plan()
	normalizePlan(&plan)
	// The version first: a job that changes after it is sent again by
	// the next update, at worst twice, never missed.
	feed := n.JobsSince(0, 0)
	sent, err := n.Jobs(node.JobFilter{Limit: max(limit, 1)})
	if err != nil {
		return streamSnapshot{}, nodeError("stream: list jobs", err)
	}
	if limit == 0 || sent == nil {
		sent = []jobs.Job{}
	}
	sent = st.cl.viewAll(sent)
	reconfigs, err := n.Reconfigs(streamReconfigs)
	if err != nil {
		return streamSnapshot{}, nodeError("stream: reconfigurations", err)
	}
	if reconfigs == nil {
		reconfigs = []jobs.Reconfig{}
	}
	if len(reconfigs) > 0 {
		st.reconfigSeq = reconfigs[0].Seq
	}
	scheds, _, version := sh.scheds.get(n, fresh)
	st.jobsVersion, st.planVersion, st.schedVersion = feed.Version, plan.Version, version
	return streamSnapshot{Time: time.Now(), Plan: plan, Jobs: sent, jobCounts: jobCounts{Total: feed.Total, Counts: feed.Counts},
		Reconfigs: reconfigs, Schedulers: scheds}, nil
}

// update sends what changed since the last message: the plan (once per
// version), the jobs changed since the version seen, the new
// reconfigurations, each read and encoded once for the streams that send
// them within fresh of each other (sh). It reports whether more changed
// jobs are left than one message holds.
func (st *streamState) update(w *sseWriter, n Node, sh *streamShared, fresh time.Duration) (more bool, err error) {
	if b, v := sh.plans.encoded(n); v != st.planVersion {
		st.planVersion = v
		w.eventJSON("plan", b)
	}
	b := sh.batches.encoded(n, st.jobsVersion, st.cl, fresh)
	st.jobsVersion = b.upto
	if b.data != nil {
		w.eventJSON("jobs", b.data)
	}
	if err := st.reconfigs(w, n, &sh.recent, fresh); err != nil {
		return false, err
	}
	return b.more, w.err
}

// batchCache holds the last "jobs" events built. Streams send their
// updates on a common beat (nextBeat), so that those woken by the same
// changes ask the same question at the same moment (the jobs changed
// since the same version) and send the same bytes, encoded once for
// each viewer (the admins, or one other user: caller.viewer).
type batchCache struct {
	mu      sync.Mutex
	entries [8]jobBatch
	next    int
}

// jobBatch is one "jobs" event: the jobs changed after since, up to upto
// (nil data: none), built at built.
type jobBatch struct {
	viewer      int
	since, upto uint64
	more        bool
	data        []byte
	built       time.Time
}

// encoded returns the event of the jobs changed after since, as cl may
// see them: one built for the same since and viewer less than fresh ago,
// else a new one. An event built
// a moment ago may miss the newest changes; the stream's next update
// sends them.
func (bc *batchCache) encoded(n Node, since uint64, cl caller, fresh time.Duration) jobBatch {
	viewer := cl.viewer()
	now := time.Now()
	bc.mu.Lock()
	for _, e := range bc.entries {
		if !e.built.IsZero() && e.since == since && e.viewer == viewer && now.Sub(e.built) < fresh {
			bc.mu.Unlock()
			return e
		}
	}
	bc.mu.Unlock()
	feed := n.JobsSince(since, maxStreamBatch)
	b := jobBatch{viewer: viewer, since: since, upto: feed.Version, more: feed.More, built: now}
	if len(feed.Jobs) > 0 {
		data, err := json.Marshal(streamJobs{Jobs: cl.viewAll(feed.Jobs), jobCounts: jobCounts{Total: feed.Total, Counts: feed.Counts}, More: feed.More})
		if err != nil {
			// Jobs are plain data; should it ever fail, resend them later.
			return jobBatch{since: since, upto: since}
		}
		b.data = data
	}
	bc.mu.Lock()
	bc.entries[bc.next] = b
	bc.next = (bc.next + 1) % len(bc.entries)
	bc.mu.Unlock()
	return b
}

// nextBeat is how long until the streams' next common beat: the next
// multiple of gap since the epoch, so that every stream woken by a change
// sends its update at the same moment, at most once per gap.
func nextBeat(now time.Time, gap time.Duration) time.Duration {
	return gap - time.Duration(now.UnixNano()%int64(gap))
}

// planCache holds the plan's JSON for its version: every stream sends
// the same bytes, encoded once.
type planCache struct {
	mu      sync.Mutex
	version uint64
	data    []byte
}

// encoded returns the node's plan as JSON and its version.
func (pc *planCache) encoded(n Node) ([]byte, uint64) {
	plan := n.Plan()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.data != nil && pc.version == plan.Version {
		return pc.data, pc.version
	}
	normalizePlan(&plan)
	b, err := json.Marshal(plan)
	if err != nil {
		// A plan is plain data; should it ever fail, say so in the stream.
		b = []byte(`{"error":` + strconv.Quote(err.Error()) + `}`)
	}
	pc.version, pc.data = plan.Version, b
	return b, plan.Version
}

// reconfigs sends the reconfigurations recorded since the newest one
// sent, newest first (of the last streamReconfigs, which recent reads
// once for the streams woken together).
func (st *streamState) reconfigs(w *sseWriter, n Node, recent *sharedRecent, fresh time.Duration) error {
	list, err := recent.get(n, fresh)
	if err != nil {
		return fmt.Errorf("reconfigurations: %w", err)
	}
	if len(list) == 0 || list[0].Seq <= st.reconfigSeq {
		return nil
	}
	var newer []jobs.Reconfig
	for _, r := range list {
		if r.Seq > st.reconfigSeq {
			newer = append(newer, r)
		}
	}
	st.reconfigSeq = list[0].Seq
	w.event("reconfigs", newer)
	return nil
}

// sharedRecent holds the last reconfigurations read from the node, for
// the streams that look within fresh of each other.
type sharedRecent struct {
	mu   sync.Mutex
	at   time.Time
	list []jobs.Reconfig
}

func (sr *sharedRecent) get(n Node, fresh time.Duration) ([]jobs.Reconfig, error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if !sr.at.IsZero() && time.Since(sr.at) < fresh {
		return sr.list, nil
	}
	list, err := n.Reconfigs(streamReconfigs)
	if err != nil {
		return nil, err
	}
	sr.at, sr.list = time.Now(), list
	return list, nil
}

// schedulers sends the kernel schedulers if they changed since last sent
// (the event is built once for every stream by scheds).
func (st *streamState) schedulers(w *sseWriter, n Node, scheds *sharedScheds, fresh time.Duration) {
	_, event, version := scheds.get(n, fresh)
	if version == st.schedVersion {
		return
	}
	st.schedVersion = version
	w.eventJSON("kernelsched", event)
}

// sharedScheds holds the kernel schedulers as the streams send them: the
// list, the "kernelsched" event of it, and a version that changes when
// the list does. It reads the node again when older than fresh.
type sharedScheds struct {
	mu      sync.Mutex
	at      time.Time
	list    []node.SchedView
	encoded []byte // the list's JSON, to tell a change
	event   []byte
	version uint64
}

func (ss *sharedScheds) get(n Node, fresh time.Duration) ([]node.SchedView, []byte, uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.at.IsZero() && time.Since(ss.at) < fresh {
		return ss.list, ss.event, ss.version
	}
	ss.at = time.Now()
	list := schedulers(n)
	b, err := json.Marshal(list)
	if err != nil || (ss.version > 0 && bytes.Equal(b, ss.encoded)) {
		return ss.list, ss.event, ss.version
	}
	event, err := json.Marshal(streamSched{Time: ss.at, Schedulers: list})
	if err != nil {
		return ss.list, ss.event, ss.version
	}
	ss.list, ss.encoded, ss.event = list, b, event
	ss.version++
	return ss.list, ss.event, ss.version
}

// schedulers are the node's kernel schedulers with their lists [] rather
// than null (an instance with no task connected has none).
func schedulers(n Node) []node.SchedView {
	list := n.Schedulers()
	if list == nil {
		list = []node.SchedView{}
	}
	for i := range list {
		if list[i].Tasks == nil {
			list[i].Tasks = []server.TaskView{}
		}
		if list[i].Timeline == nil {
			list[i].Timeline = []server.Span{}
		}
	}
	return list
}

// normalizePlan gives a plan's lists [] rather than null, as /plan does.
func normalizePlan(p *node.PlanView) {
	if p.GPUs == nil {
		p.GPUs = []node.GPUView{}
	}
	if p.Waiting == nil {
		p.Waiting = []string{}
	}
	if p.WaitingJobs == nil {
		p.WaitingJobs = []node.WaitingView{}
	}
	if p.WaitingByClass == nil {
		p.WaitingByClass = map[string]int{}
	}
	for i := range p.GPUs {
		if p.GPUs[i].Instances == nil {
			p.GPUs[i].Instances = []node.InstanceView{}
		}
		for k := range p.GPUs[i].Instances {
			if p.GPUs[i].Instances[k].Jobs == nil {
				p.GPUs[i].Instances[k].Jobs = []node.PlacedView{}
			}
		}
	}
}

// sseWriter writes server-sent events and flushes each; after the first
// failed write (the client went away) it writes nothing and err holds
// why.
type sseWriter struct {
	w     io.Writer
	flush func()
	err   error
}

// event writes one event whose data is v as JSON.
func (w *sseWriter) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("stream %s: %w", name, err)
		}
		return
	}
	w.eventJSON(name, b)
}

// eventJSON writes one event of JSON data (one line: encoding/json
// escapes newlines inside strings), in place: data is shared by streams.
func (w *sseWriter) eventJSON(name string, data []byte) {
	if w.err != nil {
		return
	}
	for _, part := range [][]byte{[]byte("event: " + name + "\ndata: "), data, []byte("\n\n")} {
		if _, err := w.w.Write(part); err != nil {
			w.err = err
			return
		}
	}
	w.flush()
}

func (w *sseWriter) raw(s string) {
	if w.err != nil {
		return
	}
	if _, err := io.WriteString(w.w, s); err != nil {
		w.err = err
		return
	}
	w.flush()
}
