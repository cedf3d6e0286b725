package slosuite

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/mmkgpu/mmk/slo"
)

// Suite is the scenario suite of the latency controller (issue 52):
// scenarios drawn from a GPU's calibration, in two seeded splits, each
// run under every static setting a user could pick and under the
// controllers compared, on the same requests.
type Suite struct {
	Cal *Calibration
	// Ladder is the controllers' ladder; each rung a calibrated setting.
	Ladder slo.Ladder
	// Statics are the static settings compared (calibrated settings).
	Statics []string
	// HeldOutMix is the mix only the held-out split draws from.
	HeldOutMix string
	// N is the scenarios per split.
	N int
}

// DefaultLadder is the suite's: the SLO benchmark's mask ladder, which
// issue 53 makes mmkd's default where masks work.
func DefaultLadder() slo.Ladder {
	l, err := slo.ParseLadder([]string{"priority", "tpcs=0.97", "tpcs=0.75", "tpcs=0.5", "tpcs=0.25", "suspend"})
	if err != nil {
		panic(err) // a constant ladder
	}
	return l
}

// DefaultN is the scenarios per split (issue 52 asks 200 held out).
const DefaultN = 200

// NewSuite is the suite of a calibration with the default ladder, every
// calibrated setting but suspend as a static one, the last calibrated
// mix held out, and DefaultN scenarios per split.
func NewSuite(cal *Calibration) (*Suite, error) {
	s := &Suite{Cal: cal, Ladder: DefaultLadder(), N: DefaultN}
	if len(cal.Mixes) < 2 {
		return nil, fmt.Errorf("scenario suite: %d calibrated mixes; want two or more (one is held out)", len(cal.Mixes))
	}
	s.HeldOutMix = cal.Mixes[len(cal.Mixes)-1].Name
	seen := map[string]bool{}
	for _, m := range cal.Mixes {
		for _, name := range m.SettingNames() {
			if name != "suspend" && !seen[name] {
				seen[name] = true
				s.Statics = append(s.Statics, name)
			}
		}
	}
	slices.Sort(s.Statics)
	return s, nil
}

// Scenarios are a split's scenarios.
func (s *Suite) Scenarios(split Split) ([]*Scenario, error) {
	return Generate(s.Cal, split, s.N, s.settings(), s.HeldOutMix)
}

// settings are every setting a scenario's mix must have measured.
func (s *Suite) settings() []string {
	out := append(s.Ladder.Strings(), s.Statics...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Candidate is a controller compared: its name, and its configuration
// for a scenario (the suite puts in the ladder).
type Candidate struct {
	Name   string
	Config func(*Scenario) slo.Config
	// Seeded gives the controller every rung's service times from the
	// start (the calibration's): a bound on what learning the plant
	// costs.
	Seeded bool
	// StopBound is the bound of a suspension (zero:
	// slo.DefaultStopBound, as the kernel scheduler's).
	StopBound slo.StopBound
}

// Run evaluates each scenario under every static setting and each
// candidate, on all CPUs; the outcomes are per candidate, in the order
// of the scenarios. done is called after each scenario (nil: not).
func (s *Suite) Run(scs []*Scenario, cands []Candidate, done func(n int)) ([][]*Outcome, error) {
	out := make([][]*Outcome, len(cands))
	for i := range out {
		out[i] = make([]*Outcome, len(scs))
	}
	var (
		mu    sync.Mutex
		first error
		n     int
		wg    sync.WaitGroup
	)
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				err := s.runOne(scs[k], cands, out, k)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				n++
				if done != nil {
					done(n)
				}
				mu.Unlock()
			}
		}()
	}
	for k := range scs {
		work <- k
	}
	close(work)
	wg.Wait()
	return out, first
}

func (s *Suite) runOne(sc *Scenario, cands []Candidate, out [][]*Outcome, k int) error {
	p, err := newPlant(s.Cal, sc)
	if err != nil {
		return err
	}
	var statics []*Result
	for _, name := range s.Statics {
		if p.mix.Settings[name] == nil {
			return fmt.Errorf("scenario %s #%d: static setting %s was not calibrated beside mix %s", sc.Split, sc.ID, name, sc.Mix)
		}
		statics = append(statics, p.Static(name))
	}
	for i, c := range cands {
		cfg := c.Config(sc)
		cfg.Ladder = s.Ladder
		r, err := p.Controlled(c.Name, cfg, c.Seeded, c.StopBound)
		if err != nil {
			return err
		}
		out[i][k] = &Outcome{Scenario: sc, Controller: r, Statics: statics, Rungs: s.Ladder.Strings()}
	}
	return nil
}
