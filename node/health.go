package node

import (
	"slices"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
)

// healthWindow is how long the GPUs' health history reaches back: ten
// minutes, 600 samples at the default interval of a second.
// healthMaxSamples bounds it where the node samples faster.
const (
	healthWindow     = 10 * time.Minute
	healthMaxSamples = 3600
)

// HealthSample is one point of a GPU's health over time: the readings
// that move (utilisation, power, temperature); nil where unknown.
type HealthSample struct {
	At         time.Time `json:"t"`
	UtilPct    *int      `json:"utilPct"`
	MemUtilPct *int      `json:"memUtilPct"`
	PowerW     *float64  `json:"powerW"`
	TempC      *int      `json:"tempC"`
}

// GPUHealthView is one GPU's health at the last sample, with its samples
// over the window.
type GPUHealthView struct {
	partitioner.GPUHealth
	// History is its samples, oldest first.
	History []HealthSample `json:"history"`
}

// HealthView is the GPUs' health: the last readings and their history.
type HealthView struct {
	// At is when the GPUs were last read (zero before the first read);
	// Every the sampling interval (0: not sampled, the backend cannot
	// read health); Window how far back the history reaches.
	At     time.Time       `json:"at"`
	Every  time.Duration   `json:"everyNs"`
	Window time.Duration   `json:"windowNs"`
	GPUs   []GPUHealthView `json:"gpus"`
}

// healthState is what the node keeps of the GPUs' health (under
// healthMu).
type healthState struct {
	at   time.Time
	last []partitioner.GPUHealth
	// history is each GPU's samples by index, oldest first.
	history map[int][]HealthSample
}

// healthReader is the backend's health reader, nil when it has none.
func (n *Node) healthReader() partitioner.HealthReader {
	r, _ := n.cfg.Backend.(partitioner.HealthReader)
	return r
}

// Health is the GPUs' health at the last sample, with each GPU's samples
// taken after since (all of the window when since is zero).
func (n *Node) Health(since time.Time) HealthView {
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	v := HealthView{At: n.health.at, Window: healthWindow, GPUs: []GPUHealthView{}}
	if n.healthReader() != nil && n.cfg.UsageEvery > 0 {
		v.Every = n.cfg.UsageEvery
	}
	for _, g := range n.health.last {
		hist := n.health.history[g.GPU]
		i, _ := slices.BinarySearchFunc(hist, since, func(s HealthSample, t time.Time) int {
			if s.At.After(t) {
				return 1
			}
			return -1
		})
		v.GPUs = append(v.GPUs, GPUHealthView{GPUHealth: g, History: slices.Clone(hist[i:])})
	}
	return v
}

// sampleHealth reads the GPUs' health once and adds it to the history,
// dropping what fell out of the window.
func (n *Node) sampleHealth(r partitioner.HealthReader) error {
	hs, err := r.Health()
	if err != nil {
		return err
	}
	now := n.cfg.Now()
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	if n.health.history == nil {
		n.health.history = map[int][]HealthSample{}
	}
	n.health.at, n.health.last = now, hs
	seen := map[int]bool{}
	for _, h := range hs {
		seen[h.GPU] = true
		hist := append(n.health.history[h.GPU], HealthSample{At: now, UtilPct: h.UtilPct, MemUtilPct: h.MemUtilPct, PowerW: h.PowerW, TempC: h.TempC})
		cut := slices.IndexFunc(hist, func(s HealthSample) bool { return now.Sub(s.At) < healthWindow })
		cut = max(cut, len(hist)-healthMaxSamples)
		n.health.history[h.GPU] = slices.Delete(hist, 0, cut)
	}
	for gpu := range n.health.history {
		if !seen[gpu] {
			delete(n.health.history, gpu)
		}
	}
	return nil
}
