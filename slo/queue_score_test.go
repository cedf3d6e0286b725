package slo

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats"
)

// queueLadder is the replay's ladder for a recording, each rung with the
// static setting that stands for it (3/4 of the TPCs for MPS 70 %, 1/2
// for 50 %, 1/4 for hold, suspend for the service alone), of those the
// recording has; and the static settings by hand it has of priority, MPS
// 70 % and MPS 50 %.
func queueLadder(rec benchRecording) (rungs, settings, statics []string) {
	for _, p := range [][2]string{{"priority", "prio"}, {"tpcs=0.97", "mask=0.97"}, {"tpcs=0.75", "prio+70%"}, {"tpcs=0.5", "prio+50%"}, {"tpcs=0.25", "hold"}, {"suspend", "together"}} {
		if rec.Service[p[1]] != nil {
			rungs, settings = append(rungs, p[0]), append(settings, p[1])
		}
	}
	for _, s := range []string{"prio", "mask=0.97", "prio+70%", "prio+50%"} {
		if rec.Service[s] != nil {
			statics = append(statics, s)
		}
	}
	return rungs, settings, statics
}

// queueScore is the acceptance, counted over replays through the
// queue model of recordings and seeds.
type queueScore struct {
	// held counts the phases some static setting kept 99 % in time in;
	// missed those of them the controller did not; slow those where its
	// trainers ran below 0.9x the fastest static setting that held the
	// phase; failed those with either.
	held, missed, slow, failed [4]int
	// runs counts the replays where some static setting held every
	// phase; short those where the controller's trainers ran below 1.15x
	// the fastest such setting over the run (shortBy: by that setting),
	// ratios their ratios.
	runs, short int
	ratios      []float64
	shortBy     map[string]int
	// late and onset count the controller's late requests in each phase
	// and those of them that arrived in the first 2 s of their phase.
	late, onset [4]int
	// whole counts the replays and passed those where the controller met
	// the acceptance whole: no phase failed, and, where some static
	// setting held every phase, 1.15x the fastest such over the run.
	whole, passed int
}

// scoreQueue replays rec through a controller (aim: Config.Aim) and
// through each static setting pinned, with the same seeds, and adds up
// the acceptance's points of each seed in sc, and of each campaign of
// three seeds (the rounds of a GPU run: the medians of each phase's
// shares in time and trainer speeds) in camp; in mps70 those of MPS 70 %
// by hand scored as the controller is.
func scoreQueue(t *testing.T, rec benchRecording, target Target, phaseLen time.Duration, seeds []uint64, aim float64, noForecast bool, sc, camp, mps70 *queueScore) {
	t.Helper()
	rungs, settings, statics := queueLadder(rec)
	ladder, err := ParseLadder(rungs)
	if err != nil {
		t.Fatal(err)
	}
	var ctrl []queueResult
	pinned := make([][]queueResult, len(statics))
	for _, seed := range seeds {
		c, err := New(Config{Ladder: ladder, Aim: aim, NoForecast: noForecast})
		if err != nil {
			t.Fatal(err)
		}
		c.AddService("svc", target)
		r := queueRun(t, rec, c, settings, target.Bound, phaseLen, seed)
		ctrl = append(ctrl, r)
		var ps []queueResult
		for k, s := range statics {
			p, _ := New(Config{Ladder: Ladder{{}}})
			p.AddService("svc", target)
			pinned[k] = append(pinned[k], queueRun(t, rec, p, []string{s}, target.Bound, phaseLen, seed))
			ps = append(ps, pinned[k][len(pinned[k])-1])
		}
		sc.add(r, ps, statics)
		if k := slices.Index(statics, "prio+70%"); k >= 0 {
			mps70.add(ps[k], ps, statics)
		}
		for _, at := range r.lateAt {
			i := min(int(at/phaseLen), 3)
			sc.late[i]++
			if at-time.Duration(i)*phaseLen < 2*time.Second {
				sc.onset[i]++
			}
		}
	}
	for g := 0; g+3 <= len(seeds); g += 3 {
		ps := make([]queueResult, len(statics))
		for k := range statics {
			ps[k] = medians(pinned[k][g : g+3])
		}
		camp.add(medians(ctrl[g:g+3]), ps, statics)
	}
}

// add counts the acceptance's points of a controller's replay r against
// the static settings' replays with the same draws.
func (sc *queueScore) add(r queueResult, statics []queueResult, names []string) {
	var best [4]float64 // per phase, the fastest static setting that held it
	bestRun := 0.0      // the fastest that held every phase, over the run
	bestName := ""
	for k, p := range statics {
		all := true
		for i, a := range p.att {
			if a >= 0.99 {
				best[i] = max(best[i], p.train[i])
			} else {
				all = false
			}
		}
		if all && floats.Sum(p.train) > bestRun {
			bestRun, bestName = floats.Sum(p.train), names[k]
		}
	}
	sc.whole++
	pass := true
	for i, b := range best {
		if b == 0 {
			continue
		}
		pass = pass && r.att[i] >= 0.99 && r.train[i] >= 0.9*b
		sc.held[i]++
		if r.att[i] < 0.99 {
			sc.missed[i]++
		}
		if r.train[i] < 0.9*b {
			sc.slow[i]++
		}
		if r.att[i] < 0.99 || r.train[i] < 0.9*b {
			sc.failed[i]++
		}
	}
	if bestRun > 0 {
		sc.runs++
		ratio := floats.Sum(r.train) / bestRun
		pass = pass && ratio >= 1.15
		sc.ratios = append(sc.ratios, ratio)
		if ratio < 1.15 {
			sc.short++
			if sc.shortBy == nil {
				sc.shortBy = map[string]int{}
			}
			sc.shortBy[bestName]++
		}
	}
	if pass {
		sc.passed++
	}
}

// medians is, per phase, the median share in time and the median
// trainer speed of replays.
func medians(rs []queueResult) queueResult {
	var m queueResult
	for i := range rs[0].att {
		var a, tr []float64
		for _, r := range rs {
			a, tr = append(a, r.att[i]), append(tr, r.train[i])
		}
		slices.Sort(a)
		slices.Sort(tr)
		m.att, m.train = append(m.att, a[len(a)/2]), append(m.train, tr[len(tr)/2])
	}
	return m
}

// TestControllerQueueReplayScore replays the nineteen recorded H100
// rounds on a GPU that did not stall (12-15, 18-23, 35, 36, 40, 42-47;
// target p99 = 25 ms, one vgg19 trainer) through the queue model, 9 seeds
// each (its own per round), phases of 22 s as on the GPU, with the ladder
// the recording can stand for (the cheap mask tpcs=0.97 in rounds 35 and
// 36 only), and counts the acceptance points against the static
// settings by hand replayed with the same arrivals and luck: of the
// phases some static setting held (99 % in time), those the controller
// did not; those where its trainers ran below 0.9x the fastest static
// setting that held the phase; and over each run, its trainers against
// the fastest static setting that held every phase (goal 1.15x); and the
// runs where it met all of these. It counts them for each seed and for
// each campaign of three seeds (a GPU run of three rounds, judged on
// medians), with the queue forecast and without it (Config.NoForecast).
//
// With the forecast, campaigns met the acceptance whole in 20 of 57,
// without it in 9. Per phase (low / medium / high / low again) of
// 57/57/54/57 held, the campaigns missed 1/1/10/0 and were slow in
// 2/12/17/1 with it, missed 1/0/13/0 and were slow in 4/34/14/3 without:
// a rise from the low load no longer pre-empts where priority is
// forecast to hold the new one, which, at the edge of the budget, a phase
// sometimes misses by a request or two. Each seed: missed 4/23/38/7,
// slow in 13/40/55/15, the run a median 1.18x (below 1.15x in 50 of
// 148), met whole in 50 of 171; without: missed 4/9/45/8, slow in
// 25/80/47/19, 1.16x (70 of 148), whole in 23. The queue model flatters
// the forecast (its service times are the model's own draws); the GPU
// rounds 44-47 are its test (docs/results/slo-h100-shared.md).
//
// Most missed high phases are a rung that leaks a little past the budget
// all phase (most late requests of the high phases come after its first
// 2 s), which a binomial test at Alpha cannot tell from the budget within
// a phase. MPS 70 % by hand, scored as the controller is, misses 1/0/40/0
// and is slow in 168/130/2/162.
//
// Before the forecast, on the thirteen rounds before 42, every knob
// tried traded one per-phase point for the other (none kept): aiming at
// half the budget (SLO_AIM=0.5) missed 3/5/20/7 and was slow in
// 16/55/39/17 (3/7/30/7 and 16/54/29/14 at the full aim); spending what
// was left of the budget over the last 30 s, 3/5/17/7 and 16/58/43/22;
// skipping a rise's pre-emption where the rung in force was predicted to
// hold at the new load by a power of the load (not by its queue),
// 3/12/39/7 and 5/44/20/7. Longer phases helped the run, not the high
// phase: 35 s missed 5/6/22/3, 60 s 2/3/28/0 (aim 0.5: 2/3/3/0, slow in
// 4/60/55/7). SLO_PHASE replays phases of another length, SLO_AIM
// another aim, SLO_ONLY only the recordings whose name holds it.
func TestControllerQueueReplayScore(t *testing.T) {
	phaseLen := 22 * time.Second
	if v := os.Getenv("SLO_PHASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SLO_PHASE %q is not a duration above 0", v)
		}
		phaseLen = d
	}
	aim := 0.0
	if v := os.Getenv("SLO_AIM"); v != "" {
		a, err := strconv.ParseFloat(v, 64)
		if err != nil || CheckAim(a) != nil {
			t.Fatalf("SLO_AIM %q is not an aim in (0, 1]", v)
		}
		aim = a
	}
	score := func(noForecast bool) (sc, camp queueScore, med float64) {
		var mps70 queueScore
		for i, f := range queueRecordings {
			if slices.Contains([]string{"testdata/b32-phases-h100-25ms-r38-stalls.json", "testdata/b32-phases-h100-25ms-r39-stalls.json"}, f) {
				continue
			}
			if only := os.Getenv("SLO_ONLY"); only != "" && !strings.Contains(f, only) {
				continue
			}
			scoreQueue(t, loadRecording(t, f), MustParse("p99=25ms"), phaseLen, seedsOf(i, 9), aim, noForecast, &sc, &camp, &mps70)
		}
		of := map[bool]string{false: "with the forecast", true: "without the forecast"}[noForecast]
		med = sc.log(t, of+", each seed")
		camp.log(t, of+", campaigns of 3 seeds (medians)")
		if !noForecast {
			mps70.log(t, "MPS 70 % by hand scored as the controller")
		}
		t.Logf("%s: the controller's late requests per phase %v, of them in the phase's first 2 s %v", of, sc.late, sc.onset)
		return sc, camp, med
	}
	sc, camp, med := score(false)
	_, campOff, _ := score(true)
	if camp.passed == 0 || camp.passed < 2*campOff.passed {
		t.Errorf("campaigns met the acceptance whole: %d of %d with the forecast, %d without; want at least twice as many", camp.passed, camp.whole, campOff.passed)
	}
	if m := sum4(sc.missed); m > 80 || sc.missed[1] > 30 {
		t.Errorf("missed %d phases that a static setting held (%v), want at most 80, at most 30 of them medium", m, sc.missed)
	}
	if med < 1.15 {
		t.Errorf("the controller's trainers at a median %.2fx the best static setting that held every phase, want at least 1.15x", med)
	}
}

// sum4 adds up a count per phase.
func sum4(xs [4]int) int { return xs[0] + xs[1] + xs[2] + xs[3] }

// seedsOf is the n seeds of the i-th recording, none shared with another
// recording's: each recording meets its own arrivals.
func seedsOf(i, n int) []uint64 {
	s := make([]uint64, n)
	for k := range s {
		s[k] = uint64(1000*(i+1) + k)
	}
	return s
}

// log logs the score and returns the median of the run ratios.
func (sc *queueScore) log(t *testing.T, of string) float64 {
	t.Helper()
	slices.Sort(sc.ratios)
	med := 0.0
	if len(sc.ratios) > 0 {
		med = sc.ratios[len(sc.ratios)/2]
	}
	t.Logf("%s: phases some static setting held %v; the controller missed %v, its trainers below 0.9x in %v, either in %v", of, sc.held, sc.missed, sc.slow, sc.failed)
	t.Logf("%s: runs with a static setting that held every phase %d; the controller's trainers below 1.15x it in %d (median %.2fx; against %v); the acceptance met whole in %d of %d", of, sc.runs, sc.short, med, sc.shortBy, sc.passed, sc.whole)
	return med
}
