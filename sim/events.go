package sim

import "time"

type evKind uint8

const (
	evStart  evKind = iota // a closed-loop or back-to-back request starts
	evArrive               // a Poisson request arrives
	evCall                 // a process calls the launch API
	evSubmit               // a released kernel reaches the GPU
	evGPU                  // the GPU's next kernel ends
	evWake                 // the scheduler's timer
	evSLO                  // the latency controller's tick (slo.go)
)

// event is one entry of the simulation's agenda; ties in time go in the
// order the events were scheduled, which makes runs deterministic.
type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	task int
	ver  uint64
	k    gpuKernel
}

// eventHeap is a binary min-heap of events by (at, seq), typed to avoid
// container/heap's interface conversions.
type eventHeap struct{ es []event }

func (h *eventHeap) Len() int { return len(h.es) }

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.es[i], &h.es[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *eventHeap) push(e event) {
	h.es = append(h.es, e)
	i := len(h.es) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.es[i], h.es[p] = h.es[p], h.es[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	top := h.es[0]
	n := len(h.es) - 1
	h.es[0] = h.es[n]
	h.es = h.es[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.es[i], h.es[m] = h.es[m], h.es[i]
		i = m
	}
	return top
}

func (s *sim) nextSeq() uint64 {
	s.evSeq++
	return s.evSeq
}

func (s *sim) push(at time.Duration, kind evKind, task int) {
	s.ev.push(event{at: at, seq: s.nextSeq(), kind: kind, task: task})
}

func (s *sim) pushKernel(at time.Duration, k gpuKernel) {
	s.ev.push(event{at: at, seq: s.nextSeq(), kind: evSubmit, task: -1, k: k})
}
