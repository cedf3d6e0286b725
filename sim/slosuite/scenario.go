package slosuite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// Split names one of the suite's two sets of scenarios.
type Split string

// The splits. The controller is tuned on Tune only; HeldOut is reported
// beside it and never tuned against. Their scenarios come from disjoint
// seeds (splitSeeds), and HeldOut alone draws from the mix Tune leaves
// out (Suite.HeldOutMix).
const (
	Tune    Split = "tune"
	HeldOut Split = "held-out"
)

// splitSeeds: a split's scenario i is drawn from seed base+i. Fixed
// with the suite, before any tuning (issue 52); nothing tunes against
// the held-out seeds.
var splitSeeds = map[Split]uint64{Tune: 1, HeldOut: 1_000_001}

// The shape of a run: its length and the segments it is judged on. A
// segment is long enough for a few hundred requests of a service at its
// low load (20 s at 8/s: 160), short enough that a load shape's
// phases fall in different segments.
const (
	RunLength = 160 * time.Second
	SegLength = 20 * time.Second
)

// Class is how tight a target is against the service alone.
type Class string

// The classes of target: the bound is a multiple of the service's latency
// alone at the target's percentile at its peak load (aloneLatency), drawn
// from the class's range.
const (
	Tight  Class = "tight"
	Medium Class = "medium"
	Loose  Class = "loose"
)

var classRange = map[Class][2]float64{Tight: {1.5, 2.5}, Medium: {2.5, 4}, Loose: {4, 8}}

// Service is one online job of a scenario.
type Service struct {
	// Name is a calibrated service's.
	Name   string
	Target slo.Target
	Class  Class
	Load   Shape
	// TailShare of its requests (0: none) take TailMin to TailMax times
	// their measured service time: a tail heavier than measured (a
	// collector's pauses, a slow input), the same under every setting.
	TailShare, TailMin, TailMax float64
}

// Scenario is one case of the suite: a trainer mix and one to three
// services, each with its load shape and target, for RunLength, judged
// per SegLength.
type Scenario struct {
	ID    int
	Split Split
	Seed  uint64
	// Mix is a calibrated trainer mix's name.
	Mix      string
	Services []Service
	// Length and Segment are its run's and its segments' length
	// (RunLength and SegLength where zero): the suite's scenarios keep
	// those; a case replayed from a GPU round has the round's (SLORound).
	Length, Segment time.Duration
}

// Segments is how many segments a suite's run has.
func Segments() int { return int(RunLength / SegLength) }

// RunFor is the scenario's run's length.
func (sc *Scenario) RunFor() time.Duration {
	if sc.Length > 0 {
		return sc.Length
	}
	return RunLength
}

// SegmentLength is the length of the segments it is judged on.
func (sc *Scenario) SegmentLength() time.Duration {
	if sc.Segment > 0 {
		return sc.Segment
	}
	return SegLength
}

// SegmentCount is how many segments its run has.
func (sc *Scenario) SegmentCount() int { return max(int(sc.RunFor()/sc.SegmentLength()), 1) }

// String is a one-line account of the scenario.
func (sc *Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d [%s]", sc.Split, sc.ID, sc.Mix)
	for _, s := range sc.Services {
		fmt.Fprintf(&b, " %s %s (%s) %s", s.Name, s.Target, s.Class, s.Load)
		if s.TailShare > 0 {
			fmt.Fprintf(&b, " tail %.1f%%x%.1f-%.1f", 100*s.TailShare, s.TailMin, s.TailMax)
		}
	}
	return b.String()
}

// Generate draws n scenarios of a split from the calibration: the mixes
// that measured every setting of settings for every service (HeldOut
// draws from all of them, Tune from all but heldOutMix), their services,
// and for each service a load shape, a target and maybe a heavier tail.
// The same calibration, split and n give the same scenarios.
func Generate(cal *Calibration, split Split, n int, settings []string, heldOutMix string) ([]*Scenario, error) {
	base, ok := splitSeeds[split]
	if !ok {
		return nil, fmt.Errorf("scenario suite: unknown split %q; want %s or %s", split, Tune, HeldOut)
	}
	var mixes []*Mix
	for _, m := range cal.Mixes {
		if split == Tune && m.Name == heldOutMix {
			continue
		}
		if len(servicesOf(m, settings)) > 0 {
			mixes = append(mixes, m)
		}
	}
	if len(mixes) == 0 {
		return nil, fmt.Errorf("scenario suite: no calibrated mix measured every setting (%s) for a service", strings.Join(settings, ", "))
	}
	out := make([]*Scenario, 0, n)
	for i := range n {
		seed := base + uint64(i)
		rng := rand.New(rand.NewPCG(seed, 0x5c3a))
		for try := 0; ; try++ {
			if try == maxDraws {
				return nil, fmt.Errorf("scenario %s #%d: no scenario of %d drawn is contended (priority misses a segment)", split, i, maxDraws)
			}
			sc, err := draw(cal, rng, mixes, settings)
			if err != nil {
				return nil, fmt.Errorf("scenario %s #%d: %w", split, i, err)
			}
			sc.ID, sc.Split, sc.Seed = i, split, seed
			if contended, err := sc.contended(cal); err != nil || contended {
				if err != nil {
					return nil, err
				}
				out = append(out, sc)
				break
			}
		}
	}
	return out, nil
}

// maxDraws is how many scenarios a scenario's seed may draw before one
// is contended.
const maxDraws = 1000

// draw draws one scenario (its mix, services, loads and targets).
func draw(cal *Calibration, rng *rand.Rand, mixes []*Mix, settings []string) (*Scenario, error) {
	m := mixes[rng.IntN(len(mixes))]
	names := servicesOf(m, settings)
	rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
	k := min(1+rng.IntN(3), len(names))
	sc := &Scenario{Mix: m.Name}
	for _, name := range slices.Sorted(slices.Values(names[:k])) {
		sv, err := drawService(rng, m, name)
		if err != nil {
			return nil, err
		}
		sc.Services = append(sc.Services, sv)
	}
	return sc, nil
}

// contended reports whether priority alone, the restraint mmk applies
// without a controller, misses a service's target in some segment: a
// scenario where it holds every one asks nothing of a controller: it is
// left out of the suite.
func (sc *Scenario) contended(cal *Calibration) (bool, error) {
	p, err := newPlant(cal, sc)
	if err != nil {
		return false, err
	}
	r := p.Static("priority")
	for j := range sc.SegmentCount() {
		if !r.Held(sc, j) {
			return true, nil
		}
	}
	return false, nil
}

// servicesOf are the services the mix measured under every setting.
func servicesOf(m *Mix, settings []string) []string {
	var out []string
	for name := range m.Settings[settings[0]].serviceNames() {
		if m.Has(settings, []string{name}) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Setting) serviceNames() map[string]bool {
	out := map[string]bool{}
	if s == nil {
		return out
	}
	for n, v := range s.Service {
		if len(v) > 0 {
			out[n] = true
		}
	}
	return out
}

// The ranges the generator draws from. A service's peak load is a share
// of what it serves on priority (its utilisation there: rate times mean
// service time) between peakLoad's; its low load a share of the peak.
var (
	peakLoad = [2]float64{0.2, 0.75}
	lowShare = [2]float64{0.12, 0.4}
	// tailed: the share of services with a heavier tail; its requests'
	// share and factor ranges.
	tailed      = 0.3
	tailShare   = [2]float64{0.005, 0.02}
	tailFactor  = [2]float64{2, 4}
	p95Services = 0.2
)

// drawService draws one service of a scenario.
func drawService(rng *rand.Rand, m *Mix, name string) (Service, error) {
	alone := m.Settings["suspend"]
	prio := m.Settings["priority"]
	if alone == nil || prio == nil || len(alone.Service[name]) == 0 || len(prio.Service[name]) == 0 {
		return Service{}, fmt.Errorf("mix %s: service %s needs the settings suspend and priority measured", m.Name, name)
	}
	sv := Service{Name: name}
	pct := 99.0
	if rng.Float64() < p95Services {
		pct = 95
	}
	classes := []Class{Tight, Medium, Loose}
	sv.Class = classes[rng.IntN(len(classes))]
	mult := uniform(rng, classRange[sv.Class])
	mean := meanOf(prio.Service[name]).Seconds()
	high := uniform(rng, peakLoad) / mean
	low := high * uniform(rng, lowShare)
	kind := Kinds[rng.IntN(len(Kinds))]
	sv.Load = drawShape(rng, kind, low, high)
	if rng.Float64() < tailed {
		sv.TailShare, sv.TailMin, sv.TailMax = uniform(rng, tailShare), tailFactor[0], tailFactor[1]
	}
	at := aloneLatency(alone.Service[name], high, pct, sv)
	bound := time.Duration(mult * float64(at)).Round(100 * time.Microsecond)
	sv.Target = slo.Target{Percentile: pct, Bound: max(bound, 100*time.Microsecond)}
	return sv, nil
}

// aloneLatency is a service's latency alone at a percentile: through its
// queue at its peak rate, with its service times alone (suspend) and its
// tail, the latency a user measures alone at the load the target is
// set for.
func aloneLatency(times []time.Duration, rate, pct float64, sv Service) time.Duration {
	const n = 20000
	rng := rand.New(rand.NewPCG(uint64(len(times)), math.Float64bits(rate)))
	lat := make([]time.Duration, n)
	var at, free time.Duration
	for i := range lat {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		d := float64(times[rng.IntN(len(times))])
		if sv.TailShare > 0 && rng.Float64() < sv.TailShare {
			d *= sv.TailMin + (sv.TailMax-sv.TailMin)*rng.Float64()
		}
		free = max(free, at) + time.Duration(d)
		lat[i] = free - at
	}
	slices.Sort(lat)
	return slo.Quantile(lat, pct)
}

// drawShape draws a shape of the kind between low and high.
func drawShape(rng *rand.Rand, kind ShapeKind, low, high float64) Shape {
	s := Shape{Kind: kind, Low: low, High: high, Length: RunLength}
	switch kind {
	case Steps:
		s.Levels = []float64{low, math.Sqrt(low * high), high, low}
	case Random:
		for range 8 {
			s.Levels = append(s.Levels, low*math.Pow(high/low, rng.Float64()))
		}
	case Bursts:
		// The base load is a third of the peak: a burst reaches high.
		s.Low = high / BurstX
		for t := time.Duration(0); ; {
			t += time.Duration((8 + 8*rng.Float64()) * float64(time.Second))
			if t+BurstLen > RunLength {
				break
			}
			s.Starts = append(s.Starts, t)
		}
	case Sine:
		s.Phase = 2 * math.Pi * rng.Float64()
	}
	return s
}

func uniform(rng *rand.Rand, r [2]float64) float64 { return r[0] + (r[1]-r[0])*rng.Float64() }

func meanOf(v []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range v {
		sum += d
	}
	return sum / time.Duration(max(len(v), 1))
}
