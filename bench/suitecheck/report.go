package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/internal/stats"
)

// mixCheck is one mix's rounds and the suite's prediction of each.
type mixCheck struct {
	label  string
	rounds []*round
	preds  []*prediction
}

// median of f over the rounds (or predictions) of m.
func (m mixCheck) median(f func(k int) float64) float64 {
	v := make([]float64, len(m.rounds))
	for k := range v {
		v[k] = f(k)
	}
	return stats.Median(v)
}

// settings are those every round and prediction has, the controller last.
func (m mixCheck) settings() []string {
	var out []string
	for _, s := range slices.Sorted(maps.Keys(m.rounds[0].cells)) {
		ok := s != "mmk"
		for k := range m.rounds {
			ok = ok && m.rounds[k].cells[s] != nil && m.preds[k].cells[s] != nil
		}
		if ok {
			out = append(out, s)
		}
	}
	return append(out, "mmk")
}

// report writes the comparison as markdown.
func report(w io.Writer, args []string, ladder string, seeds int, mixes []mixCheck) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The scenario suite against GPU rounds of the same case\n\n`go run ./bench/suitecheck %s`\n\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "Each GPU round of the SLO benchmark (bench/gpu/slo.py) replayed through the scenario suite's plant "+
		"(sim/slosuite: the calibrated service times of each service beside the round's trainer mix under each setting, the queue model, "+
		"the real controller stepped on them, ladder `%s`), with the round's rates, targets and phase lengths, %d draws of the arrivals. "+
		"GPU: the median over the mix's rounds; suite: the median over the rounds of each round's median over draws. "+
		"Attainment: the lowest share of a service's requests in time in the phase; trainers: their mean speed against priority's over the run, "+
		"in the same source (the GPU measures a trainer against it alone in the round, the calibration the trainers against the mix alone: "+
		"the two differ where several trainers share the GPU). "+
		"The suite leaves out the controller's stop bound (on the GPU a suspension ends after 30 s and the trainers then run 30 s) "+
		"and the settle of a new setting (the GPU's first 1.5 s of a setting are not measured).\n\n", ladder, seeds)
	for _, m := range mixes {
		fmt.Fprintf(&b, "## %s (calibrated mix %s), %d rounds\n\n", m.label, m.preds[0].mix, len(m.rounds))
		if len(m.preds[0].missing) > 0 {
			fmt.Fprintf(&b, "Not calibrated, left out: %s.\n\n", strings.Join(m.preds[0].missing, ", "))
		}
		// The trainers' speed against priority's over the run, in the
		// same source: the GPU's is against each trainer alone, the
		// suite's against the mix alone, which differ where several
		// trainers share the GPU.
		whole := func(cells []cell) float64 {
			sum := 0.0
			for _, c := range cells {
				sum += c.speed
			}
			return sum / float64(len(phases))
		}
		gpuRef := func(k int) float64 { return whole(m.rounds[k].cells["prio"]) }
		suiteRef := func(k int) float64 { return whole(m.preds[k].cells["prio"]) }
		if m.rounds[0].cells["prio"] == nil {
			gpuRef, suiteRef = func(int) float64 { return 1 }, func(int) float64 { return 1 }
		}
		b.WriteString("| setting | phase | lowest attainment, GPU / suite | trainers against priority's over the run, GPU / suite |\n| --- | --- | --- | --- |\n")
		for _, s := range m.settings() {
			for j, ph := range phases {
				fmt.Fprintf(&b, "| %s | %s | %.1f %% / %.1f %% | %.2f / %.2f |\n", s, ph,
					100*m.median(func(k int) float64 { return m.rounds[k].cells[s][j].attain }),
					100*m.median(func(k int) float64 { return m.preds[k].cells[s][j].attain }),
					m.median(func(k int) float64 { return ratio(m.rounds[k].cells[s][j].speed, gpuRef(k)) }),
					m.median(func(k int) float64 { return ratio(m.preds[k].cells[s][j].speed, suiteRef(k)) }))
			}
		}
		b.WriteString("\nThe trainers over the run against priority's, GPU / suite (against alone, GPU / suite): ")
		var parts []string
		for _, s := range m.settings() {
			parts = append(parts, fmt.Sprintf("%s %.2f / %.2f (%.2f / %.2f)", s,
				m.median(func(k int) float64 { return ratio(whole(m.rounds[k].cells[s]), gpuRef(k)) }),
				m.median(func(k int) float64 { return ratio(whole(m.preds[k].cells[s]), suiteRef(k)) }),
				m.median(func(k int) float64 { return whole(m.rounds[k].cells[s]) }),
				m.median(func(k int) float64 { return whole(m.preds[k].cells[s]) })))
		}
		b.WriteString(strings.Join(parts, "; ") + ".\n\n")
		b.WriteString("The controller's rungs per phase, GPU (share of its steps, all rounds) / suite (share of time):\n\n| phase | GPU | suite |\n| --- | --- | --- |\n")
		for j, ph := range phases {
			gpu, suite := map[string]float64{}, map[string]float64{}
			for k := range m.rounds {
				for r, v := range m.rounds[k].rungs[j] {
					gpu[r] += v / float64(len(m.rounds))
				}
				for r, v := range m.preds[k].rungs[j] {
					suite[r] += v / float64(len(m.preds))
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", ph, shares(gpu), shares(suite))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratio is a / b, 0 where b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// shares writes rung shares, largest first, those above half a percent.
func shares(m map[string]float64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range keys {
		if m[k] >= 0.005 {
			out = append(out, fmt.Sprintf("%s %.0f %%", k, 100*m[k]))
		}
	}
	return strings.Join(out, ", ")
}
