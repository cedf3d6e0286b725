package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/stats"
	"github.com/mmkgpu/mmk/sim/slosuite"
	"github.com/mmkgpu/mmk/slo"
)

// prediction is the suite's account of a round: per setting (the
// round's names) and phase, the median over the draws of the arrivals;
// the controller's share of time on each rung per phase, their mean.
type prediction struct {
	mix   string
	cells map[string][]cell
	rungs []map[string]float64
	// missing are the round's settings the calibration lacks.
	missing []string
}

// calibrated is the calibration's name of a round's setting ("": none;
// mmk is the controller).
func calibrated(setting string) string {
	switch {
	case setting == "prio":
		return "priority"
	case strings.HasPrefix(setting, "reqmask="):
		return "tpcs=" + strings.TrimPrefix(setting, "reqmask=") + "/req"
	case strings.HasPrefix(setting, "mask="):
		return "tpcs=" + strings.TrimPrefix(setting, "mask=")
	case setting == "hold" || strings.HasPrefix(setting, "prio+"):
		return setting
	}
	return ""
}

// mixOf is the calibrated mix of the round's trainers' models.
func mixOf(cal *slosuite.Calibration, models []string) (*slosuite.Mix, error) {
	for _, m := range cal.Mixes {
		var ms []string
		for _, part := range strings.Split(m.Name, ",") {
			model, _, _ := strings.Cut(part, ":")
			ms = append(ms, model)
		}
		sort.Strings(ms)
		if slices.Equal(ms, models) {
			return m, nil
		}
	}
	var names []string
	for _, m := range cal.Mixes {
		names = append(names, m.Name)
	}
	return nil, fmt.Errorf("trainers %s: no calibrated mix of those models (calibrated: %s)", strings.Join(models, ", "), strings.Join(names, "; "))
}

// predict runs the round's case through the suite seeds times.
func predict(cal *slosuite.Calibration, r *round, names map[string]string, cfg slo.Config, seeds int) (*prediction, error) {
	mix, err := mixOf(cal, r.models)
	if err != nil {
		return nil, fmt.Errorf("round %s: %w", r.dir, err)
	}
	run := time.Duration(len(phases)) * r.length
	svcs := slices.Sorted(maps.Keys(r.rates))
	var services []slosuite.Service
	for _, s := range svcs {
		name, ok := names[s]
		if !ok {
			return nil, fmt.Errorf("round %s: service %s is not in -services", r.dir, s)
		}
		levels := r.rates[s]
		services = append(services, slosuite.Service{Name: name, Target: r.targets[s],
			Load: slosuite.Shape{Kind: slosuite.Steps, Levels: levels, Low: slices.Min(levels), High: slices.Max(levels), Length: run}})
	}
	pred := &prediction{mix: mix.Name, cells: map[string][]cell{}}
	var statics, round []string
	for _, s := range slices.Sorted(maps.Keys(r.cells)) {
		c := calibrated(s)
		switch {
		case s == "mmk":
		case c == "" || mix.Settings[c] == nil:
			pred.missing = append(pred.missing, s)
		default:
			statics, round = append(statics, c), append(round, s)
		}
	}
	suite := &slosuite.Suite{Cal: cal, Statics: statics, Ladder: cfg.Ladder}
	var scs []*slosuite.Scenario
	for k := range seeds {
		scs = append(scs, &slosuite.Scenario{ID: k, Split: "gpu", Seed: uint64(k + 1), Mix: mix.Name, Services: services, Length: run, Segment: r.length})
	}
	outs, err := suite.Run(scs, []slosuite.Candidate{{Name: "mmk", Config: func(*slosuite.Scenario) slo.Config { return cfg }}}, nil)
	if err != nil {
		return nil, fmt.Errorf("round %s: %w", r.dir, err)
	}
	draws := map[string][][]cell{} // setting -> phase -> draws
	add := func(setting string, sc *slosuite.Scenario, res *slosuite.Result) {
		if draws[setting] == nil {
			draws[setting] = make([][]cell, len(phases))
		}
		for j := range phases {
			c := cell{attain: 1, speed: res.SegSpeed[j]}
			for i := range sc.Services {
				if n := res.N[j][i]; n > 0 {
					c.attain = min(c.attain, 1-float64(res.Late[j][i])/float64(n))
				}
			}
			draws[setting][j] = append(draws[setting][j], c)
		}
	}
	pred.rungs = make([]map[string]float64, len(phases))
	for j := range pred.rungs {
		pred.rungs[j] = map[string]float64{}
	}
	rungNames := cfg.Ladder.Strings()
	for _, o := range outs[0] {
		add("mmk", o.Scenario, o.Controller)
		for k, res := range o.Statics {
			add(round[k], o.Scenario, res)
		}
		for j, on := range onRung(o.Controller, r.length, len(rungNames)) {
			for l, d := range on {
				pred.rungs[j][rungNames[l]] += d.Seconds() / r.length.Seconds() / float64(seeds)
			}
		}
	}
	for s, byPhase := range draws {
		pred.cells[s] = make([]cell, len(phases))
		for j, cs := range byPhase {
			var a, v []float64
			for _, c := range cs {
				a, v = append(a, c.attain), append(v, c.speed)
			}
			pred.cells[s][j] = cell{attain: stats.Median(a), speed: stats.Median(v)}
		}
	}
	return pred, nil
}

// onRung is the controller's time on each rung (by level) in each
// phase, from its decisions (it starts on rung 0).
func onRung(res *slosuite.Result, length time.Duration, rungs int) [][]time.Duration {
	out := make([][]time.Duration, len(phases))
	for j := range out {
		out[j] = make([]time.Duration, rungs)
	}
	level, at := 0, time.Duration(0)
	spend := func(until time.Duration) {
		for at < until {
			j := min(int(at/length), len(phases)-1)
			end := min(until, time.Duration(j+1)*length)
			if j == len(phases)-1 {
				end = until
			}
			out[j][level] += end - at
			at = end
		}
	}
	for _, d := range res.Decisions {
		spend(min(d.At, time.Duration(len(phases))*length))
		level = d.To
	}
	spend(time.Duration(len(phases)) * length)
	return out
}
