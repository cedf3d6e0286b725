package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// phases are the SLO benchmark's load phases, in order.
var phases = []string{"low", "medium", "high", "low-again"}

// round is what one GPU round of the SLO benchmark measured.
type round struct {
	dir string
	// length is a phase's; rates each service's per phase.
	length time.Duration
	rates  map[string][]float64
	// targets are the services' (run.log).
	targets map[string]slo.Target
	// models are the trainers' models, sorted.
	models []string
	// cells are per setting and phase; rungs the controller's share of
	// steps on each rung per phase (slo.jsonl).
	cells map[string][]cell
	rungs []map[string]float64
}

// cell is one setting in one phase: the lowest share of a service's
// requests in time, and the trainers' mean speed against each alone.
type cell struct {
	attain, speed float64
}

// window is a line of slo.py's windows.jsonl.
type window struct {
	Setting  string
	Phase    string
	M0, M1   float64
	Rates    map[string]float64
	Services map[string]struct {
		N    int `json:"n"`
		Late int `json:"late"`
	}
	Trainers map[string]struct {
		ItS float64 `json:"it_s"`
	}
}

// readRound reads a round's windows.jsonl, run.log and slo.jsonl.
func readRound(dir string) (*round, error) {
	ws, err := readLines[window](filepath.Join(dir, "windows.jsonl"))
	if err != nil {
		return nil, err
	}
	r := &round{dir: dir, rates: map[string][]float64{}, cells: map[string][]cell{}}
	alone := map[string]float64{}
	for _, w := range ws {
		if strings.HasPrefix(w.Setting, "alone ") {
			for n, t := range w.Trainers {
				alone[baseName(n)] = t.ItS
			}
		}
	}
	models := map[string]bool{}
	for _, w := range ws {
		i := slices.Index(phases, w.Phase)
		if i < 0 || strings.HasPrefix(w.Setting, "alone ") || len(w.Services) == 0 {
			continue
		}
		if r.cells[w.Setting] == nil {
			r.cells[w.Setting] = make([]cell, len(phases))
		}
		c := cell{attain: 1}
		for _, s := range w.Services {
			if s.N > 0 {
				c.attain = min(c.attain, 1-float64(s.Late)/float64(s.N))
			}
		}
		n := 0
		for name, t := range w.Trainers {
			if a := alone[baseName(name)]; a > 0 {
				c.speed += t.ItS / a
				n++
			}
			models[strings.TrimSuffix(baseName(name), "-train")] = true
		}
		if n > 0 {
			c.speed /= float64(n)
		}
		r.cells[w.Setting][i] = c
		if w.Setting == "mmk" {
			r.length = time.Duration((w.M1 - w.M0) * float64(time.Second)).Round(100 * time.Millisecond)
			for s, rate := range w.Rates {
				if r.rates[s] == nil {
					r.rates[s] = make([]float64, len(phases))
				}
				r.rates[s][i] = rate
			}
		}
	}
	if r.cells["mmk"] == nil || r.length <= 0 {
		return nil, fmt.Errorf("round %s: no windows of setting mmk in every phase", dir)
	}
	for m := range models {
		r.models = append(r.models, m)
	}
	sort.Strings(r.models)
	if r.targets, err = readTargets(filepath.Join(dir, "run.log")); err != nil {
		return nil, err
	}
	for s := range r.rates {
		if _, ok := r.targets[s]; !ok {
			return nil, fmt.Errorf("round %s: service %s has no target in run.log", dir, s)
		}
	}
	if r.rungs, err = readRungs(filepath.Join(dir, "slo.jsonl")); err != nil {
		return nil, err
	}
	return r, nil
}

// baseName is a trainer process's name without its setting's suffix
// (vgg19-train-m: vgg19-train), as slo_report.py's base.
func baseName(n string) string {
	for _, suffix := range []string{"-ts", "-70", "-50", "-m"} {
		n = strings.TrimSuffix(n, suffix)
	}
	return n
}

// readTargets reads the services' targets from a round's run.log
// ("  target NAME TARGET").
func readTargets(path string) (map[string]slo.Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	defer f.Close()
	out := map[string]slo.Target{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[0] != "target" {
			continue
		}
		t, err := slo.Parse(fs[2])
		if err != nil {
			return nil, fmt.Errorf("%s: target of %s: %w", path, fs[1], err)
		}
		out[fs[1]] = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// readRungs is the controller's share of steps on each rung per phase.
func readRungs(path string) ([]map[string]float64, error) {
	type step struct{ Setting, Phase, Rung string }
	steps, err := readLines[step](path)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]float64, len(phases))
	n := make([]int, len(phases))
	for _, s := range steps {
		i := slices.Index(phases, s.Phase)
		if s.Setting != "mmk" || i < 0 {
			continue
		}
		if out[i] == nil {
			out[i] = map[string]float64{}
		}
		out[i][s.Rung]++
		n[i]++
	}
	for i, m := range out {
		for k := range m {
			m[k] /= float64(n[i])
		}
	}
	return out, nil
}

// readLines reads a file of JSON lines.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	defer f.Close()
	var out []T
	dec := json.NewDecoder(f)
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, nil
}
