package slosuite

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/stats"
	"github.com/mmkgpu/mmk/slo"
)

// Calibration is a GPU's plant as bench/gpu/calibrate.py measured it:
// per trainer mix, per setting (a rung of the ladder, or a static
// setting by hand), each service's service times and the trainers'
// speed.
type Calibration struct {
	// Mixes in the order they first appear.
	Mixes []*Mix
	// Services are the services measured, sorted.
	Services []string
}

// Mix is one trainer mix's calibration.
type Mix struct {
	// Name is the mix as calibrate.py's --mix gave it ("vgg19:32,bert:8").
	Name string
	// Alone is each trainer's speed alone (the mix without services), in
	// steps a second: the median over passes.
	Alone map[string]float64
	// Settings by name ("priority", "tpcs=0.5", "suspend", "prio+70%").
	Settings map[string]*Setting
}

// Setting is what one setting gave beside a mix.
type Setting struct {
	Name string
	// Speed is the trainers' mean speed against alone (their steps a
	// second over the mix's Alone), the median over its windows; 0 where
	// no trainer ran (suspend).
	Speed float64
	// Service is each service's service times (start of its work to its
	// end), and Latency its latencies (arrival to end), every window's
	// (both loads, every pass), each sorted.
	Service, Latency map[string][]time.Duration
	// Loads holds each service's service times per load ("low",
	// "high"), sorted, for checks of the premise that service times do
	// not move with load.
	Loads map[string]map[string][]time.Duration
	// Windows are its windows with trainers and services, in the order
	// read: what the model of a request-scoped mask's speed is checked
	// on (SpeedAt).
	Windows []Window
}

// Window is one window of a setting: its load, the share of it during
// which some service had a request in service (Busy: the union of the
// services' requests, from the start of each one's work to its end; -1
// where the window does not say when they arrived), and
// the trainers' mean speed against alone.
type Window struct {
	Load        string
	Busy, Speed float64
}

// calibWindow is one line of calib.jsonl (the fields the suite reads).
type calibWindow struct {
	Mix     string `json:"mix"`
	Pass    int    `json:"pass"`
	Setting string `json:"setting"`
	Load    string `json:"load"`
	// M0 and M1 are its start and end (seconds of the host's monotonic
	// clock), against which arrivals are counted.
	M0       float64 `json:"m0"`
	M1       float64 `json:"m1"`
	Trainers map[string]struct {
		Steps int     `json:"steps"`
		ItS   float64 `json:"it_s"`
	} `json:"trainers"`
	Services map[string]struct {
		ArrivalS  []float64 `json:"arrival_s"`
		ServiceMs []float64 `json:"service_ms"`
		LatencyMs []float64 `json:"latency_ms"`
	} `json:"services"`
}

// mixAlone is the setting name of calibrate.py's windows of the
// trainers without services.
const mixAlone = "mix alone"

// LoadCalibration reads calib.jsonl files (gzipped where they end in
// .gz), in order; windows of a mix and setting met again add to it.
func LoadCalibration(paths ...string) (*Calibration, error) {
	var ws []calibWindow
	for _, p := range paths {
		got, err := readCalibFile(p)
		if err != nil {
			return nil, err
		}
		ws = append(ws, got...)
	}
	return buildCalibration(ws)
}

func readCalibFile(path string) ([]calibWindow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	defer f.Close()
	return readCalib(path, f)
}

// readCalib reads the windows of the calibration file name from r,
// gunzipped where name ends in .gz.
func readCalib(name string, r io.Reader) ([]calibWindow, error) {
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("calibration %s: %w", name, err)
		}
		defer z.Close()
		r = z
	}
	ws, err := readWindows(r)
	if err != nil {
		return nil, fmt.Errorf("calibration %s: %w", name, err)
	}
	return ws, nil
}

// ReadCalibration reads calib.jsonl from r.
func ReadCalibration(r io.Reader) (*Calibration, error) {
	ws, err := readWindows(r)
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	return buildCalibration(ws)
}

// maxCalibLine is the longest line read: a window of a few seconds holds
// a few thousand requests.
const maxCalibLine = 16 << 20

func readWindows(r io.Reader) ([]calibWindow, error) {
	var ws []calibWindow
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxCalibLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var w calibWindow
		if err := json.Unmarshal(line, &w); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := w.check(); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		ws = append(ws, w)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ws, nil
}

// check refuses a window the suite cannot use.
func (w calibWindow) check() error {
	switch {
	case w.Mix == "":
		return errors.New("no mix")
	case w.Setting == "":
		return errors.New("no setting")
	}
	for name, t := range w.Trainers {
		if t.ItS < 0 || t.ItS != t.ItS {
			return fmt.Errorf("trainer %q: it_s %v is not a speed", name, t.ItS)
		}
	}
	for name, s := range w.Services {
		if len(s.ServiceMs) != len(s.LatencyMs) {
			return fmt.Errorf("service %q: %d service times and %d latencies", name, len(s.ServiceMs), len(s.LatencyMs))
		}
		if len(s.ArrivalS) > 0 && len(s.ArrivalS) != len(s.ServiceMs) {
			return fmt.Errorf("service %q: %d arrivals and %d service times", name, len(s.ArrivalS), len(s.ServiceMs))
		}
		for i, v := range s.ServiceMs {
			if !(v >= 0 && v < maxMs) || !(s.LatencyMs[i] >= v && s.LatencyMs[i] < maxMs) {
				return fmt.Errorf("service %q: request %d: service %v ms, latency %v ms (want 0 <= service <= latency < %v)", name, i, v, s.LatencyMs[i], float64(maxMs))
			}
		}
	}
	return nil
}

// maxMs bounds a request's time: an hour.
const maxMs = 3.6e6

func buildCalibration(ws []calibWindow) (*Calibration, error) {
	c := &Calibration{}
	byName := map[string]*Mix{}
	alone := map[string]map[string][]float64{}     // mix -> trainer -> speeds
	speeds := map[[2]string][]map[string]float64{} // (mix, setting) -> windows' trainer speeds
	services := map[string]bool{}
	for _, w := range ws {
		m := byName[w.Mix]
		if m == nil {
			m = &Mix{Name: w.Mix, Alone: map[string]float64{}, Settings: map[string]*Setting{}}
			byName[w.Mix] = m
			c.Mixes = append(c.Mixes, m)
			alone[w.Mix] = map[string][]float64{}
		}
		if w.Setting == mixAlone {
			for t, v := range w.Trainers {
				alone[w.Mix][t] = append(alone[w.Mix][t], v.ItS)
			}
			continue
		}
		s := m.Settings[w.Setting]
		if s == nil {
			s = &Setting{Name: w.Setting, Service: map[string][]time.Duration{}, Latency: map[string][]time.Duration{},
				Loads: map[string]map[string][]time.Duration{}}
			m.Settings[w.Setting] = s
		}
		if len(w.Trainers) > 0 {
			sp := map[string]float64{}
			for t, v := range w.Trainers {
				sp[t] = v.ItS
			}
			speeds[[2]string{w.Mix, w.Setting}] = append(speeds[[2]string{w.Mix, w.Setting}], sp)
			s.Windows = append(s.Windows, Window{Load: w.Load, Busy: w.busy()})
		}
		for name, v := range w.Services {
			services[name] = true
			for i, ms := range v.ServiceMs {
				d := msDuration(ms)
				s.Service[name] = append(s.Service[name], d)
				s.Latency[name] = append(s.Latency[name], msDuration(v.LatencyMs[i]))
				if s.Loads[name] == nil {
					s.Loads[name] = map[string][]time.Duration{}
				}
				s.Loads[name][w.Load] = append(s.Loads[name][w.Load], d)
			}
		}
	}
	for _, m := range c.Mixes {
		for t, v := range alone[m.Name] {
			m.Alone[t] = stats.Median(v)
		}
		for _, s := range m.Settings {
			for _, v := range s.Service {
				slices.Sort(v)
			}
			for _, v := range s.Latency {
				slices.Sort(v)
			}
			for _, l := range s.Loads {
				for _, v := range l {
					slices.Sort(v)
				}
			}
			ws := speeds[[2]string{m.Name, s.Name}]
			s.Speed = m.speedOf(ws)
			for i, w := range ws {
				// Against the mix alone, known once every window is read.
				s.Windows[i].Speed = m.speedOf([]map[string]float64{w})
			}
		}
	}
	c.Services = slices.Sorted(maps.Keys(services))
	if len(c.Mixes) == 0 {
		return nil, errors.New("calibration: no window")
	}
	return c, nil
}

// speedOf is the median over windows of the trainers' mean speed against
// alone (0 with no window or no trainer alone).
func (m *Mix) speedOf(windows []map[string]float64) float64 {
	var per []float64
	for _, w := range windows {
		sum, n := 0.0, 0
		for t, v := range w {
			if a := m.Alone[t]; a > 0 {
				sum += v / a
				n++
			}
		}
		if n > 0 {
			per = append(per, sum/float64(n))
		}
	}
	if len(per) == 0 {
		return 0
	}
	return stats.Median(per)
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Mix is the calibration of the named mix (nil: none).
func (c *Calibration) Mix(name string) *Mix {
	for _, m := range c.Mixes {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Has reports whether the mix measured every setting named, each with
// service times of every service named.
func (m *Mix) Has(settings, services []string) bool {
	for _, s := range settings {
		st := m.Settings[s]
		if st == nil {
			return false
		}
		for _, sv := range services {
			if len(st.Service[sv]) == 0 {
				return false
			}
		}
	}
	return true
}

// SettingNames are the mix's settings, sorted by name.
func (m *Mix) SettingNames() []string {
	return slices.SortedFunc(maps.Keys(m.Settings), cmp.Compare[string])
}

// PriorsFrom are the rungs' priors of the calibration (slo.Priors, as
// a map): for each setting but priority, the median over the mixes (but
// exclude, "" none) and their services of the service's mean service
// time there over its mean on priority. The controller forecasts a rung
// not measured beside the jobs of now through them; the suite gives each
// scenario those of the other mixes, so that no scenario is forecast
// from its own mix's calibration.
func (c *Calibration) PriorsFrom(exclude string) map[string]float64 {
	ratios := map[string][]float64{}
	for _, m := range c.Mixes {
		prio := m.Settings["priority"]
		if m.Name == exclude || prio == nil {
			continue
		}
		for name, s := range m.Settings {
			if name == "priority" {
				continue
			}
			for svc, v := range s.Service {
				if p := prio.Service[svc]; len(p) > 0 && len(v) > 0 {
					ratios[name] = append(ratios[name], float64(meanOf(v))/float64(meanOf(p)))
				}
			}
		}
	}
	out := map[string]float64{}
	for name, r := range ratios {
		out[name] = stats.Median(r)
	}
	return out
}

// WriteSummary writes the calibration as markdown tables, one per mix:
// per setting the trainers' speed and each service's service times
// (requests, p50, p90, p99, and its mean at the high load over the low).
func (c *Calibration) WriteSummary(w io.Writer) error {
	var b strings.Builder
	for _, m := range c.Mixes {
		fmt.Fprintf(&b, "Mix %s (alone:", m.Name)
		for _, t := range slices.Sorted(maps.Keys(m.Alone)) {
			fmt.Fprintf(&b, " %s %.2f steps/s", t, m.Alone[t])
		}
		b.WriteString(")\n\n| setting | trainers' speed |")
		for _, s := range c.Services {
			fmt.Fprintf(&b, " %s: n, p50 / p90 / p99 ms, high/low |", s)
		}
		b.WriteString("\n|" + strings.Repeat(" --- |", len(c.Services)+2) + "\n")
		for _, name := range m.SettingNames() {
			st := m.Settings[name]
			fmt.Fprintf(&b, "| %s | %.2f |", name, st.Speed)
			for _, s := range c.Services {
				v := st.Service[s]
				if len(v) == 0 {
					b.WriteString(" - |")
					continue
				}
				ms := func(q float64) float64 { return float64(v[min(int(q*float64(len(v))), len(v)-1)]) / 1e6 }
				fmt.Fprintf(&b, " %d, %.1f / %.1f / %.1f, %s |", len(v), ms(0.5), ms(0.9), ms(0.99), loadRatio(st.Loads[s]))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("calibration summary: %w", err)
	}
	return nil
}

// loadRatio is a service's mean service time at the high load over the
// low ("-" without both).
func loadRatio(l map[string][]time.Duration) string {
	lo, hi := l["low"], l["high"]
	if len(lo) == 0 || len(hi) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(meanOf(hi))/float64(meanOf(lo)))
}

// RungPriors are PriorsFrom(exclude) for the settings that are rungs
// (slo.ParseRung reads them; not the static MPS shares).
func (c *Calibration) RungPriors(exclude string) slo.Priors {
	out := slo.Priors{}
	for name, f := range c.PriorsFrom(exclude) {
		if r, err := slo.ParseRung(name); err == nil {
			out[r.String()] = f
		}
	}
	return out
}
