package slo

import (
	"os"
	"testing"
	"time"
)

// TestControllerReplayScore: over the recordings with absolute targets of
// the H100 benchmark (rounds 10, 12-15 and 18-23, 22 s phases as on the
// GPU) and 9 seeds, the phases the controller ends below 99 % in time
// where the static setting that held every phase reached 99 % with the
// same draws number at most 42 of the 374 (38 with pre-emptions passing
// over rungs predicted to miss, preemptTo; 51 climbing one rung at a
// time; over rounds 10 and 12-15 alone 17 of 167 with the prediction at a
// raised load, against 33 before it), and the trainers run faster than
// under that setting over the whole run of every recording (1.09-1.56x).
// Most of the misses left are high phases (23 of the 38, 36 of 51 before
// preemptTo), where MPS 70 %, which rung 1 stands for in replay, leaked
// 1.2-1.8 % in rounds 13, 18, 20, 21 and 23; on the GPU the controller's
// mask rungs held those phases in rounds 18, 20 and 23
// (docs/results/slo-h100-d737c04.md).
// It also logs the per-phase points against each phase's best
// static setting (the fastest of priority, MPS 70 % and 50 % that held
// it with the same draws; bestStatic), asserting nothing: 46 of 395 such
// phases missed, trainers below 0.9x of it in 11, 45, 32 and 3 of the
// four phases' 99 or so, either point failed in 132.
// Aiming at half the budget (SLO_AIM=0.5, Config.Aim) 26 of the 374 are
// missed (12 high phases), either point failed in 135 of 395 (trainers
// slower in the high phases: 0.92x the static setting there, not 0.97x).
// SLO_REPLAY_SCORE=2 logs the decisions of each phase missed; SLO_PHASE
// (a duration) replays phases of another length; SLO_AIM another aim.
func TestControllerReplayScore(t *testing.T) {
	phaseLen := 22 * time.Second
	if v, err := time.ParseDuration(os.Getenv("SLO_PHASE")); err == nil {
		phaseLen = v
	}
	files := []struct{ file, static string }{
		{"testdata/b32-phases-h100-25ms.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r12.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r13.json", "prio+50%"},
		{"testdata/b32-phases-h100-25ms-r14.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r15.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r18.json", "prio+50%"},
		{"testdata/b32-phases-h100-25ms-r19.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r20.json", "prio+50%"},
		{"testdata/b32-phases-h100-25ms-r21.json", "prio+50%"},
		{"testdata/b32-phases-h100-25ms-r22.json", "prio+70%"},
		{"testdata/b32-phases-h100-25ms-r23.json", "prio+50%"},
	}
	target := MustParse("p99=25ms")
	// The acceptance's per-phase points against the best static setting
	// of each phase (of priority, MPS 70 % and 50 % by hand, the fastest
	// that kept 99 % of the phase in time with the same draws): phases
	// some setting held, those mmk did not, and those where its trainers
	// ran below 0.9x that setting's.
	bestCells, bestMissed, bestSlow, bestFailed := 0, 0, make([]int, 4), make([]int, 4)
	misses, cells := 0, 0
	perPhase := make([]int, 4)
	phaseTrain, phaseStatic := make([]float64, 4), make([]float64, 4)
	for _, f := range files {
		rec := loadRecording(t, f.file)
		var mmk, static float64
		fm := 0
		for seed := uint64(1); seed <= 9; seed++ {
			att, train, satt, strain, ds := replayAgainst(t, rec, target, f.static, phaseLen, seed)
			best := bestStatic(t, rec, target, []string{"prio", "prio+70%", "prio+50%"}, phaseLen, seed)
			for i := range att {
				if best[i] > 0 {
					bestCells++
					if att[i] < 0.99 {
						bestMissed++
					}
					if train[i] < 0.9*best[i] {
						bestSlow[i]++
					}
					if att[i] < 0.99 || train[i] < 0.9*best[i] {
						bestFailed[i]++
					}
				}
				mmk += train[i]
				phaseTrain[i] += train[i]
				phaseStatic[i] += strain[i]
				static += strain[i]
				if satt[i] >= 0.99 {
					cells++
					if att[i] < 0.99 {
						misses++
						fm++
						perPhase[i]++
						if os.Getenv("SLO_REPLAY_SCORE") == "2" {
							t.Logf("%s seed %d phase %d: %.3f against %.3f", f.file, seed, i, att[i], satt[i])
							for _, d := range ds {
								if d.At >= time.Duration(i)*phaseLen-5*time.Second && d.At < time.Duration(i+1)*phaseLen {
									t.Logf("   %6.1fs %.150s", d.At.Seconds(), d.Reason)
								}
							}
						}
					}
				}
			}
		}
		t.Logf("%s: %d phases missed; trainers %.2fx %s", f.file, fm, mmk/static, f.static)
		if mmk <= static {
			t.Errorf("%s: trainers at %.2fx %s over the run", f.file, mmk/static, f.static)
		}
	}
	for i := range phaseTrain {
		phaseTrain[i] /= phaseStatic[i]
	}
	t.Logf("trainers per phase against the static setting: %.2f", phaseTrain)
	t.Logf("missed %d of %d phases that the static setting held (per phase %v)", misses, cells, perPhase)
	t.Logf("against each phase's best static setting: %d of %d phases missed, trainers below 0.9x in %v; either in %v", bestMissed, bestCells, bestSlow, bestFailed)
	if misses > 42 {
		t.Errorf("missed %d of %d phases that the static setting held, want at most 42", misses, cells)
	}
}

// bestStatic is, per phase, the trainers' speed under the fastest of
// the static settings (of the recording) that kept 99 % of the phase's
// requests within target with the draws of seed (0: none did).
func bestStatic(t *testing.T, rec benchRecording, target Target, settings []string, phaseLen time.Duration, seed uint64) []float64 {
	t.Helper()
	var best []float64
	for _, s := range settings {
		pinned, _ := New(Config{Ladder: Ladder{{}}})
		pinned.AddService("svc", target)
		att, train, _ := replayBench(t, rec, pinned, []string{s}, target.Bound, phaseLen, seed)
		if best == nil {
			best = make([]float64, len(att))
		}
		for i := range att {
			if att[i] >= 0.99 && train[i] > best[i] {
				best[i] = train[i]
			}
		}
	}
	return best
}

// TestControllerCheapRungReplay: rounds 35 and 36 on an H100 ran a static
// mask of two TPCs (tpcs=0.97 by the GPU's map: the trainer at 0.79-0.84
// of alone, against 0.89-0.95 under priority and 0.64-0.73 under MPS 70
// %) beside priority and MPS 70 % and 50 %
// (docs/results/slo-h100-tpcmap.md). Replayed with 22 s phases and 9
// seeds, a ladder with that mask as its first rung, below the stand-in
// for MPS 70 % (priority, tpcs=0.97, tpcs=0.75, tpcs=0.5, suspend), fails
// fewer phases on either of the per-phase points against each
// phase's best static setting than the ladder without it (r35: 7 of 36
// against 13; r36: 12 against 17): far fewer too slow (2 and 1 against 9
// and 9) for one or two more missed (6 and 12 against 5 and 10); and over
// the run it keeps the trainer at 1.15x MPS 70 %'s or more (1.21x and
// 1.16x, against 1.16x and 1.08x without), the goal.
func TestControllerCheapRungReplay(t *testing.T) {
	target := MustParse("p99=25ms")
	const phaseLen = 22 * time.Second
	type ladder struct {
		rungs, settings []string
	}
	without := ladder{[]string{"priority", "tpcs=0.75", "tpcs=0.5", "suspend"}, []string{"prio", "prio+70%", "prio+50%", "together"}}
	with := ladder{[]string{"priority", "tpcs=0.97", "tpcs=0.75", "tpcs=0.5", "suspend"}, []string{"prio", "mask=0.97", "prio+70%", "prio+50%", "together"}}
	score := func(rec benchRecording, l ladder) (missed, slow, failed int, run float64) {
		lad, err := ParseLadder(l.rungs)
		if err != nil {
			t.Fatal(err)
		}
		var mmk, static float64
		for seed := uint64(1); seed <= 9; seed++ {
			c, _ := New(Config{Ladder: lad})
			c.AddService("svc", target)
			att, train, _ := replayBench(t, rec, c, l.settings, target.Bound, phaseLen, seed)
			best := bestStatic(t, rec, target, []string{"prio", "mask=0.97", "prio+70%", "prio+50%"}, phaseLen, seed)
			pinned, _ := New(Config{Ladder: Ladder{{}}})
			pinned.AddService("svc", target)
			_, strain, _ := replayBench(t, rec, pinned, []string{"prio+70%"}, target.Bound, phaseLen, seed)
			for i := range att {
				mmk, static = mmk+train[i], static+strain[i]
				if best[i] == 0 {
					continue
				}
				m, s := att[i] < 0.99, train[i] < 0.9*best[i]
				missed, slow = missed+b2i(m), slow+b2i(s)
				failed += b2i(m || s)
			}
		}
		return missed, slow, failed, mmk / static
	}
	for _, f := range []string{"testdata/b32-phases-h100-25ms-r35.json", "testdata/b32-phases-h100-25ms-r36.json"} {
		rec := loadRecording(t, f)
		m0, s0, f0, r0 := score(rec, without)
		m1, s1, f1, r1 := score(rec, with)
		t.Logf("%s: without the cheap rung %d missed, %d slow, %d failed, run %.2fx MPS 70 %%; with it %d, %d, %d, %.2fx", f, m0, s0, f0, r0, m1, s1, f1, r1)
		if f1 >= f0 || r1 < 1.15 || m1 > m0+3 {
			t.Errorf("%s: with the cheap rung %d phases failed (%d missed) and the run at %.2fx MPS 70 %%; without it %d (%d missed), %.2fx", f, f1, m1, r1, f0, m0, r0)
		}
	}
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
