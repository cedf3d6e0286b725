package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/mmkgpu/mmk/predictor"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

// coGroup is one kind of co-located run of the H100 campaign: the job's
// kind, how many co-runners it had and whether the run set MPS client
// priorities (offline jobs at 1, as mmkd does).
type coGroup struct {
	kind predictor.Kind
	co   int
	prio bool
}

func (g coGroup) String() string {
	p := "all at priority 0"
	if g.prio {
		p = "offline jobs at priority 1"
	}
	return fmt.Sprintf("%s job, %d co-runner(s), %s", g.kind, g.co, p)
}

// errs are a group's relative errors (predicted / measured - 1) and the
// measured and predicted ratios.
type errs struct{ e, meas, pred []float64 }

// campaignCheck compares the ground truth's co-location model with the
// H100 campaign's co-located runs: each job's speed next to its
// co-runners against its own speed alone at the same share (both on the
// H100), measured and as the ground truth has it (both from its curves),
// so that the check is of what co-runners and priority do, not of the
// H200's alone curves.
func campaignCheck(b *bytes.Buffer, path string, truth *jobsim.SpeedModel) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h, samples, err := predictor.ReadSamples(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	type jp struct {
		job string
		pct int
	}
	sum, n := map[jp]float64{}, map[jp]int{}
	for _, s := range samples {
		if s.CoRunners == 0 {
			sum[jp{s.Job, s.MPSPercent}] += s.Target()
			n[jp{s.Job, s.MPSPercent}]++
		}
	}
	groups := map[coGroup]*errs{}
	skipped := 0
	for _, s := range samples {
		if s.CoRunners == 0 {
			continue
		}
		k := jp{s.Job, s.MPSPercent}
		run, err := predictor.ParseRunKey(s.Run)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		co, err := run.Without(s.Job, s.MPSPercent, s.MPSPriority)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if n[k] == 0 || !truth.Has(s.Job) || slices.ContainsFunc(co, func(m predictor.Member) bool { return !truth.Has(m.Job) }) {
			skipped++ // no alone run at this share yet
			continue
		}
		alone := sum[k] / float64(n[k])
		meas := s.Target() / alone
		if s.Kind == predictor.Online {
			meas = alone / s.Target()
		}
		cs := make([]jobsim.CoShare, len(co))
		prio := s.MPSPriority > 0
		for i, m := range co {
			cs[i] = jobsim.CoShare{Job: m.Job, Pct: float64(m.Percent), Prio: m.Priority}
			prio = prio || m.Priority > 0
		}
		pct := float64(s.MPSPercent)
		pred := truth.Shared(s.Job, pct, 100, s.MPSPriority, cs) / truth.Alone(s.Job, pct)
		g := coGroup{kind: s.Kind, co: len(co), prio: prio}
		if groups[g] == nil {
			groups[g] = &errs{}
		}
		x := groups[g]
		x.e, x.meas, x.pred = append(x.e, pred/meas-1), append(x.meas, meas), append(x.pred, pred)
	}
	fmt.Fprintf(b, "## The ground truth against the H100 campaign's co-located runs\n\n")
	fmt.Fprintf(b, "`%s` (%s, %s): every sample of a job next to co-runners, its speed against its own speed alone at the same MPS share (both measured on the H100, the alone runs' mean over repetitions), and the ground truth's `Shared` against its `Alone` at that share (both from the H200 curves): a check of what co-runners and MPS client priority do in the simulator, not of the H200's alone speeds. Co-runners run at their shares, busy all the time. %d samples had no alone run at their share in the file and are left out.\n\n", path, h["gpu"], h["date"], skipped)
	b.WriteString("| job kind, co-runners, priorities | samples | measured (median [p10-p90]) | predicted (median [p10-p90]) | mean error | bias |\n|---|---|---|---|---|---|\n")
	keys := make([]coGroup, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	slices.SortFunc(keys, func(a, b coGroup) int {
		if a.kind != b.kind {
			if a.kind == predictor.Online {
				return -1
			}
			return 1
		}
		if a.prio != b.prio {
			if !a.prio {
				return -1
			}
			return 1
		}
		return a.co - b.co
	})
	for _, g := range keys {
		x := groups[g]
		abs, bias := 0.0, 0.0
		for _, e := range x.e {
			abs += math.Abs(e)
			bias += e
		}
		k := float64(len(x.e))
		fmt.Fprintf(b, "| %s | %d | %s | %s | %.0f %% | %+.0f %% |\n", g, len(x.e), quantiles(x.meas), quantiles(x.pred), 100*abs/k, 100*bias/k)
	}
	b.WriteString("\n")
	return nil
}

// quantiles is the median and the 10th and 90th percentiles of v.
func quantiles(v []float64) string {
	s := slices.Sorted(slices.Values(v))
	at := func(q float64) float64 { return s[int(math.Round(q*float64(len(s)-1)))] }
	return fmt.Sprintf("%.2f [%.2f-%.2f]", at(0.5), at(0.1), at(0.9))
}
