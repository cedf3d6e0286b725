package baselines

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/partitioner"
)

// lineEstimator is a hand-checkable speed: linear in the SMs a job gets
// (instance SMs x percent) up to its saturation point, every co-runner
// taking interference off.
type lineEstimator struct {
	saturate     map[string]float64
	interference float64
}

func (e lineEstimator) Speed(j partitioner.Job, sms, _, percent int, co []partitioner.Share) (float64, error) {
	s := math.Min(1, float64(sms)*float64(percent)/100/e.saturate[j.Type])
	return s * math.Pow(1-e.interference, float64(len(co))), nil
}

func a100(t *testing.T) *partitioner.Model {
	t.Helper()
	m, err := partitioner.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func whole(t *testing.T, m *partitioner.Model) partitioner.Layout {
	t.Helper()
	l, err := partitioner.ParseLayout(m, "7g.80gb")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestBaseProfiles: NVIDIA's five A100 base profiles, whose maximal
// layouts are the tables MIGER and MISO search.
func TestBaseProfiles(t *testing.T) {
	m := a100(t)
	var names []string
	for _, p := range BaseProfiles(m) {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "1g.10gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb" {
		t.Errorf("base profiles %s", got)
	}
	if n := len(configs(m)); n < 10 || n > 19 {
		t.Errorf("%d distinct configurations", n)
	}
}

// An online job of latency 10 ms alone on the whole GPU (98 SMs), target
// 35 ms, saturating at 98 SMs: 70 ms on a 1g (14 SMs), 35 ms on a 2g
// (not under its target, best_fit's strict <), 23.3 ms on a 3g: its best
// fit is the 3g, at 0.67 of its target, so it may host an offline job.
func onlineJob() Job {
	return Job{Job: partitioner.Job{ID: "on", Type: "full", Online: true, MemoryMiB: 2000}, LatencyMs: 10, TargetMs: 35}
}

// TestMIGERBestFit is best_fit and the 0.7 rule.
func TestMIGERBestFit(t *testing.T) {
	m := a100(t)
	g := &MIGER{Est: partitioner.NewCache(lineEstimator{saturate: map[string]float64{"full": 98}}), Model: m}
	p, l, err := g.bestFit(onlineJob())
	if err != nil || p == nil || p.Name != "3g.40gb" || math.Abs(l-10*98/42.0) > 1e-9 {
		t.Fatalf("best fit %v at %.2f ms (%v): want 3g.40gb at 23.33 ms", p, l, err)
	}
	if l/35 > MIGERShareRatio {
		t.Errorf("latency share %.3f: the test wants a host", l/35)
	}
	tight := onlineJob()
	tight.TargetMs = 10 // nothing but the whole GPU at exactly 10 ms... not under it
	if p, _, _ := g.bestFit(tight); p != nil {
		t.Errorf("target 10 ms met on %s", p.Name)
	}
}

// TestMIGEROptimize: one online job and two offline ones, "big"
// (saturating at 56 SMs) and "small" (14 SMs), interference 0.1. The
// online job takes its 3g. Of the layouts holding a 3g, [4g, 3g] with big
// in the 4g (speed 1) and small beside the online job (at 20 %, speed
// 42 x 0.2 / 14 x 0.9 = 0.54, the online job at 80 % within its target:
// 10 / (42 x 0.8 / 98 x 0.9) = 32.4 ms) beats [3g, 2g, 1g] (big 0.5 in
// the 2g, small 1 in the 1g: 1.5).
func TestMIGEROptimize(t *testing.T) {
	m := a100(t)
	est := partitioner.NewCache(lineEstimator{saturate: map[string]float64{"full": 98, "big": 56, "small": 14}, interference: 0.1})
	g := &MIGER{Est: est, Model: m}
	jobs := []Job{onlineJob(), {Job: partitioner.Job{ID: "big", Type: "big", MemoryMiB: 5000}}, {Job: partitioner.Job{ID: "small", Type: "small", MemoryMiB: 1000}}}
	p, ok, err := g.Optimize(partitioner.GPUPlan{Layout: whole(t, m)}, jobs)
	if err != nil || !ok {
		t.Fatalf("optimize: ok %v, %v", ok, err)
	}
	if math.Abs(p.Throughput-1.54) > 1e-9 {
		t.Errorf("objective %.4f, want 1.54 (layout %s, jobs %+v)", p.Throughput, p.Plan.Layout, p.Plan.Jobs)
	}
	where, pct := map[string]string{}, map[string]int{}
	for _, pl := range p.Plan.Jobs {
		where[pl.Job.ID] = p.Plan.Layout.Instances[pl.Instance].String()
		pct[pl.Job.ID] = pl.Percent
	}
	if !strings.HasPrefix(where["on"], "3g.40gb") || !strings.HasPrefix(where["big"], "4g.40gb") || where["small"] != where["on"] || pct["on"] != 80 || pct["small"] != 20 {
		t.Errorf("placed %v at %v: want on and small in the 3g at 80 + 20 %%, big in the 4g", where, pct)
	}
	// Five jobs: more than MIGER's 4 per GPU.
	more := append(slices.Clone(jobs), Job{Job: partitioner.Job{ID: "x", Type: "small"}}, Job{Job: partitioner.Job{ID: "y", Type: "small"}})
	if _, ok, _ := g.Optimize(partitioner.GPUPlan{Layout: whole(t, m)}, more); ok {
		t.Errorf("5 jobs placed on one GPU")
	}
}

// TestMIGERPairs: two offline jobs that both want a 4g (saturating at 56
// SMs). [4g, 3g] gives one the 4g (1) and the other a place beside the
// online job in its 3g: at 70 + 30 %, the online job at 10 / (42 x 0.7 /
// 98) = 33.3 ms within 35, the offline job at 42 x 0.3 / 56 = 0.225;
// 1.225 beats [3g, 3g] (0.75 + 0.225) and [3g, 2g, 1g] (0.5 + 0.25).
func TestMIGERPairs(t *testing.T) {
	m := a100(t)
	est := partitioner.NewCache(lineEstimator{saturate: map[string]float64{"full": 98, "big": 56}})
	g := &MIGER{Est: est, Model: m}
	on := onlineJob()
	jobs := []Job{on, {Job: partitioner.Job{ID: "b1", Type: "big", MemoryMiB: 5000}}, {Job: partitioner.Job{ID: "b2", Type: "big", MemoryMiB: 5000}}}
	p, ok, err := g.Optimize(partitioner.GPUPlan{Layout: whole(t, m)}, jobs)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if math.Abs(p.Throughput-1.225) > 1e-9 {
		t.Errorf("objective %.4f, want 1.225", p.Throughput)
	}
	var pairs int
	for _, pl := range p.Plan.Jobs {
		if pl.Job.Online {
			continue
		}
		for _, q := range p.Plan.Jobs {
			if q.Job.Online && q.Instance == pl.Instance {
				pairs++
				lat := 10 / (42 * float64(q.Percent) / 100 / 98)
				if lat > on.TargetMs || q.Percent != 70 || pl.Percent != 30 {
					t.Errorf("pair at %d + %d %%: online latency %.1f ms", q.Percent, pl.Percent, lat)
				}
			}
		}
	}
	if pairs != 1 {
		t.Errorf("%d pairs, want 1: %+v in %s", pairs, p.Plan.Jobs, p.Plan.Layout)
	}
}

// TestMIGERKeepsOnlineInstance: an online job already in a 3g.40gb@4
// stays there when a layout of the chosen profiles holds it. Three jobs
// saturating at 28 SMs: [2g, 2g, 3g] with two of them alone in the 2gs
// (1 each) and one beside the online job (at 30 %: 42 x 0.3 / 28 = 0.45,
// the online job at 70 %, 33.3 ms) makes 2.45,
// more than any other layout with a 3g, and 2g@0+2g@2+3g@4 holds the 3g
// where it is.
func TestMIGERKeepsOnlineInstance(t *testing.T) {
	m := a100(t)
	est := partitioner.NewCache(lineEstimator{saturate: map[string]float64{"full": 98, "small": 28}})
	g := &MIGER{Est: est, Model: m}
	l, err := partitioner.ParseLayout(m, "4g.40gb@0+3g.40gb@4")
	if err != nil {
		t.Fatal(err)
	}
	cur := partitioner.GPUPlan{Layout: l, Jobs: []partitioner.Placed{{Job: onlineJob().Job, Instance: 1, Percent: 100}}}
	jobs := []Job{onlineJob()}
	for _, id := range []string{"s1", "s2", "s3"} {
		jobs = append(jobs, Job{Job: partitioner.Job{ID: id, Type: "small", MemoryMiB: 1000}})
	}
	p, ok, err := g.Optimize(cur, jobs)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if p.Plan.Layout.Profiles() != "2g.20gb+2g.20gb+3g.40gb" || math.Abs(p.Throughput-2.45) > 1e-9 {
		t.Errorf("layout %s, objective %.3f: want [2g, 2g, 3g], 2.45", p.Plan.Layout, p.Throughput)
	}
	for _, pl := range p.Plan.Jobs {
		if pl.Job.ID == "on" && p.Plan.Layout.Instances[pl.Instance].String() != "3g.40gb@4" {
			t.Errorf("online job moved to %s in %s", p.Plan.Layout.Instances[pl.Instance], p.Plan.Layout)
		}
	}
}

// TestMIGERLoad: a 3g holding the online job alone counts the least share
// meeting its target (saturating at 42 SMs: 10 ms at 100 %, 33.3 ms at
// 30 % — under 35), an offline job's 4g counts whole: 3/7 x 0.3 + 4/7.
func TestMIGERLoad(t *testing.T) {
	m := a100(t)
	g := &MIGER{Est: partitioner.NewCache(lineEstimator{saturate: map[string]float64{"full": 42, "big": 56}}), Model: m}
	l, err := partitioner.ParseLayout(m, "4g.40gb@0+3g.40gb@4")
	if err != nil {
		t.Fatal(err)
	}
	on := onlineJob()
	plan := partitioner.GPUPlan{Layout: l, Jobs: []partitioner.Placed{{Job: partitioner.Job{ID: "b", Type: "big"}, Instance: 0, Percent: 100}, {Job: on.Job, Instance: 1, Percent: 100}}}
	got, err := g.Load(plan, map[string]Job{"on": on})
	if err != nil || math.Abs(got-(3.0/7*0.3+4.0/7)) > 1e-9 {
		t.Errorf("load %.4f (%v), want %.4f", got, err, 3.0/7*0.3+4.0/7)
	}
}

// TestMISOOptimize: two jobs go into the layouts of exactly two slices,
// [4g, 3g] or [3g, 3g]; "wide" (saturating at 98 SMs) is slowed least in
// the 4g (1.75x) while "narrow" (28 SMs) runs at full speed in either
// 3g: the mean slowdown (1.75 + 1) / 2 beats every other choice.
func TestMISOOptimize(t *testing.T) {
	m := a100(t)
	s := &MISO{Est: partitioner.NewCache(lineEstimator{saturate: map[string]float64{"wide": 98, "narrow": 28}}), Model: m}
	jobs := []partitioner.Job{{ID: "n", Type: "narrow", MemoryMiB: 1000}, {ID: "w", Type: "wide", MemoryMiB: 1000}}
	p, ok, err := s.Optimize(whole(t, m), jobs)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	where := map[string]string{}
	for _, pl := range p.Jobs {
		where[pl.Job.ID] = p.Layout.Instances[pl.Instance].Profile.Name
		if pl.Percent != 100 {
			t.Errorf("%s at %d %%: MISO runs one job per slice at 100 %%", pl.Job.ID, pl.Percent)
		}
	}
	if len(p.Layout.Instances) != 2 || where["w"] != "4g.40gb" || where["n"] != "3g.40gb" {
		t.Errorf("layout %s, placed %v", p.Layout, where)
	}
	one, ok, err := s.Optimize(whole(t, m), jobs[:1])
	if err != nil || !ok || one.Layout.Profiles() != "7g.80gb" {
		t.Errorf("one job: layout %s (%v %v), want the whole GPU", one.Layout, ok, err)
	}
}

// TestMISOMaxAllowed: update_max_allowed. An empty GPU takes a job of any
// size; next to a job whose smallest slice is a 3g (30 GB) the largest
// new slice is a 4g ([4g, 3g]); next to one that needs the whole GPU
// (45 GB: more than a 4g.40gb holds), or seven 1g jobs, no job fits.
func TestMISOMaxAllowed(t *testing.T) {
	m := a100(t)
	s := &MISO{Est: partitioner.NewCache(lineEstimator{}), Model: m}
	if p := s.MaxAllowed(nil); p == nil || p.Name != "7g.80gb" {
		t.Errorf("empty GPU: max allowed %v", p)
	}
	if p := s.MaxAllowed([]partitioner.Job{{ID: "a", MemoryMiB: 30000}}); p == nil || p.Name != "4g.40gb" {
		t.Errorf("next to a 3g-sized job: max allowed %v, want 4g.40gb", p)
	}
	if p := s.MaxAllowed([]partitioner.Job{{ID: "a", MemoryMiB: 45000}}); p != nil {
		t.Errorf("next to a whole-GPU job: max allowed %s", p.Name)
	}
	var seven []partitioner.Job
	for range 7 {
		seven = append(seven, partitioner.Job{MemoryMiB: 1000})
	}
	if p := s.MaxAllowed(seven); p != nil {
		t.Errorf("seven 1g jobs: max allowed %s", p.Name)
	}
	if p := s.MinSlice(partitioner.Job{MemoryMiB: 15000}); p == nil || p.Name != "2g.20gb" {
		t.Errorf("min slice of 15 GB: %v", p)
	}
}
