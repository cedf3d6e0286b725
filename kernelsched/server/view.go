package server

import (
	"sync"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TaskView is a connected task as the dashboard shows it.
type TaskView struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	PID      int    `json:"pid"`
	Priority int    `json:"priority"`
	Online   bool   `json:"online"`
	// Free says its launches go at once (the policy never holds them).
	Free bool `json:"free"`
	// Held are its launches waiting for a grant now.
	Held int `json:"held"`
	// Profiled says the server has its kernel profile.
	Profiled bool `json:"profiled"`
	// Quiet says the policy needs none of its launches now: its hook
	// reports none (protocol step 8).
	Quiet bool `json:"quiet"`
}

// Span is a stretch of time in which one task's released kernels ran, by
// their profiled durations one after another: the kernel scheduler's
// picture of the GPU (the hook does not see kernels end).
type Span struct {
	Task     string    `json:"task"`
	Priority int       `json:"priority"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Kernels released in the span.
	Kernels int `json:"kernels"`
}

// Timeline limits: spans closer than spanMerge join; at most maxSpans are
// kept, none older than spanKeep.
const (
	spanMerge = 200 * time.Microsecond
	maxSpans  = 2048
	spanKeep  = 5 * time.Second
)

// view is what the loop publishes for readers on other goroutines.
type view struct {
	mu     sync.Mutex
	queues [kernelsched.NumPriorities]int
	tasks  []TaskView
	stats  map[string]float64 // the policy's own (kernelsched.Scheduler.PolicyStats)
	spans  []span             // ring, oldest first from head
	head   int
	// open is each task's last span index in spans (-1: none).
	open map[kernelsched.TaskID]int
	// wall is time.Now() minus mono() at start: it turns the loop's
	// monotonic times into wall times.
	wall time.Duration
}

type span struct {
	task       kernelsched.TaskID
	name       string
	priority   int
	start, end time.Duration
	kernels    int
}

func (v *view) init() {
	v.open = map[kernelsched.TaskID]int{}
	v.wall = time.Duration(time.Now().UnixNano()) - mono()
}

// wallOf is the wall time of a time on the loop's monotonic clock.
func (v *view) wallOf(d time.Duration) time.Time { return time.Unix(0, int64(v.wall+d)) }

// record adds a released kernel of task t running from start to end.
func (v *view) record(t *task, start, end time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if i, ok := v.open[t.id]; ok && i < len(v.spans) && v.spans[i].task == t.id && start-v.spans[i].end <= spanMerge {
		s := &v.spans[i]
		s.end = max(s.end, end)
		s.kernels++
		return
	}
	s := span{task: t.id, name: t.hello.Name, priority: t.hello.Priority, start: start, end: end, kernels: 1}
	if len(v.spans) < maxSpans {
		v.spans = append(v.spans, s)
		v.open[t.id] = len(v.spans) - 1
		return
	}
	v.spans[v.head] = s
	v.open[t.id] = v.head
	v.head = (v.head + 1) % maxSpans
}

// Timeline returns the spans of the spanKeep before the last one's end,
// oldest first: the last seconds of activity.
func (s *Server) Timeline() []Span {
	v := &s.view
	v.mu.Lock()
	defer v.mu.Unlock()
	var last time.Duration
	for _, sp := range v.spans {
		last = max(last, sp.end)
	}
	out := make([]Span, 0, len(v.spans))
	for k := range v.spans {
		sp := v.spans[(v.head+k)%len(v.spans)]
		if last-sp.end > spanKeep {
			continue
		}
		out = append(out, Span{Task: sp.name, Priority: sp.priority, Kernels: sp.kernels,
			Start: time.Unix(0, int64(sp.start+v.wall)), End: time.Unix(0, int64(sp.end+v.wall))})
	}
	return out
}

// Queues returns the launches held now per priority.
func (s *Server) Queues() [kernelsched.NumPriorities]int {
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	return s.view.queues
}

// Tasks returns the connected tasks.
func (s *Server) Tasks() []TaskView {
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	return append([]TaskView{}, s.view.tasks...)
}

// publish refreshes the queue depths and the tasks for readers; the loop
// calls it after it changed them.
func (s *Server) publish() {
	var q [kernelsched.NumPriorities]int
	tasks := make([]TaskView, 0, len(s.tasks))
	for _, t := range s.tasks {
		ct, err := s.core.Task(t.id)
		if err != nil {
			continue
		}
		held := ct.Pending()
		q[t.hello.Priority] += held
		tasks = append(tasks, TaskView{Name: t.hello.Name, Key: t.hello.TaskKey, PID: t.hello.PID, Priority: t.hello.Priority,
			Online: t.hello.Online, Free: t.free, Held: held, Profiled: ct.Spec.Profile != nil, Quiet: t.quiet})
	}
	stats := s.core.PolicyStats()
	s.view.mu.Lock()
	s.view.queues, s.view.tasks, s.view.stats = q, tasks, stats
	s.view.mu.Unlock()
}

// PolicyStats are the policy's own counters and state as last published
// (nil if it keeps none).
func (s *Server) PolicyStats() map[string]float64 {
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	return s.view.stats
}
