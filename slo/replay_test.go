package slo

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchRecording is a recording of the SLO benchmark (testdata/
// b32-phases-*.json): its batch-32 service's latencies and the trainers'
// speed in each static setting and load phase.
type benchRecording struct {
	Rates    map[string]float64              `json:"rates"`
	Latency  map[string]map[string][]float64 `json:"latency"`
	Trainers map[string]map[string]float64   `json:"trainers"`
	// Service and Arrivals are, in the order of Latency, each request's
	// service time (ms) and its arrival (s into its window), for the
	// queue model (queue_replay_test.go); older recordings lack them.
	Service  map[string]map[string][]float64 `json:"service"`
	Arrivals map[string]map[string][]float64 `json:"arrivals"`
}

func loadRecording(t *testing.T, file string) benchRecording {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r benchRecording
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// replayBench runs a controller over the recorded benchmark: in each
// phase (phaseLen at its recorded rate), a request's latency is drawn from
// what the service saw in the setting that stands for the rung in force
// (rungOf), and the trainers run at that setting's recorded speed. It
// returns per phase the attainment against bound and the trainers' mean
// speed, and the decisions.
func replayBench(t *testing.T, rec benchRecording, c *Controller, rungOf []string, bound, phaseLen time.Duration, seed uint64) (att, train []float64, ds []Decision) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var pending []req
	now := time.Duration(0)
	for _, phase := range []string{"low", "medium", "high", "low-again"} {
		rate := rec.Rates[phase]
		end := now + phaseLen
		next := now + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
		n, late := 0, 0
		speed, steps := 0.0, 0
		for ; now < end; now += 10 * time.Millisecond {
			setting := rungOf[c.Level()]
			for next <= now {
				d := rec.Latency[mixPick(setting, rng)][phase]
				lat := time.Duration(d[rng.IntN(len(d))] * float64(time.Millisecond))
				pending = append(pending, req{next + lat, lat})
				n++
				if lat > bound {
					late++
				}
				next += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
			}
			pending = deliver(c, pending, now, Reported)
			if d, ok := c.Step(now); ok {
				ds = append(ds, d)
			}
			speed += mixSpeed(rec, rungOf[c.Level()], phase)
			steps++
		}
		att = append(att, 1-float64(late)/float64(n))
		train = append(train, speed/float64(steps))
	}
	return att, train, ds
}

// replayAgainst replays rec through a controller with mmk's masking
// ladder (each rung standing for the static setting of about its size:
// 3/4 of the TPCs for MPS 70 %, 1/2 for 50 %, 1/4 for hold, suspend for
// the services alone) and through the static setting pinned, with the
// same draws: per phase the attainment and the trainers' speed of each,
// and the controller's decisions. SLO_MIX=D adds a rung between priority
// and the first mask that stands for MPS 70 % a share D of the time and
// priority the rest (a duty-cycled mask, each request's latency drawn from
// one or the other): in the score of TestControllerReplayScore, at D 0.2
// to 0.5, 100-110 of 395 phases failed either per-phase point against
// each phase's best static setting (132 without) but 70-73 of 374 were
// missed that the static setting held (38 without): the controller
// cannot tell in a 22 s phase whether such a rung leaks past 1 %.
func replayAgainst(t *testing.T, rec benchRecording, target Target, static string, phaseLen time.Duration, seed uint64) (att, train, satt, strain []float64, ds []Decision) {
	t.Helper()
	rungs := []string{"priority", "tpcs=0.75", "tpcs=0.5", "tpcs=0.25", "suspend"}
	settings := []string{"prio", "prio+70%", "prio+50%", "hold", "together"}
	if d := os.Getenv("SLO_MIX"); d != "" {
		rungs = append([]string{"priority", "tpcs=0.875"}, rungs[1:]...)
		settings = append([]string{"prio", "mix:prio:prio+70%:" + d}, settings[1:]...)
	}
	ladder, err := ParseLadder(rungs)
	if err != nil {
		t.Fatal(err)
	}
	// SLO_AIM replays the controller aiming at another share of the
	// budget (Config.Aim).
	aim, _ := strconv.ParseFloat(os.Getenv("SLO_AIM"), 64)
	c, err := New(Config{Ladder: ladder, Aim: aim})
	if err != nil {
		t.Fatal(err)
	}
	c.AddService("svc", target)
	att, train, ds = replayBench(t, rec, c, settings, target.Bound, phaseLen, seed)
	pinned, _ := New(Config{Ladder: Ladder{{}}})
	pinned.AddService("svc", target)
	satt, strain, _ = replayBench(t, rec, pinned, []string{static}, target.Bound, phaseLen, seed)
	return att, train, satt, strain, ds
}

// TestControllerOnTheBenchRecording replays recordings of the SLO
// benchmark through the controller with mmk's masking ladder, each rung
// standing for the static setting of about its size (3/4 of the TPCs for
// MPS 70 %, 1/2 for 50 %, 1/4 for hold, suspend for the services alone:
// on a batch-16 loop masks and shares of the same size protected about
// alike, docs/slo.md). It is a replay of recorded latencies, not a
// measurement of mmk. The static setting that held every phase in the
// recording is replayed beside it with the same draws; in every phase
// the controller must keep as many requests within the target as that
// setting, less the draws' noise (half a point, or one request of the
// phase where it has fewer than 200: the low phases have about 80 a
// round), in the median of five seeds, and the trainers must run faster
// over the whole run. In every seed the controller must climb while the
// load is up (a pre-emption of its rise or a tightening on evidence; or
// be above rung 0 when it rises, a burst just before having pre-empted
// it), never pre-empt in the first phase (no rise there), and come down when it
// falls.
//
// The recordings: round 1 on an H200 (trainers vgg19 and resnet50, target
// p99 = 20 ms; priority + MPS 50 % held every phase), and rounds 1-3 on an
// H100 pooled (one vgg19 trainer, target 18.8 ms, the rounds' median; at
// that target only hold held every phase). On the H100 one the controller
// is allowed 3 points below hold in a phase, a known limit and not noise:
// at low load priority leaves 3.4 % of the requests late, and the
// evidence a climb needs (three late of the 40 requests of a 5 s window)
// seldom comes in a 10 s phase; the GPU showed the same (96.5 % and
// 97.6 % in the low phase of two rounds of three, docs/slo.md). On the
// H200 one it is allowed a point: a rise must show in the counts before it
// is pre-empted (steady loads moved the rung 45 % of the time before),
// and in two seeds of five the rise to medium load is not yet sure while
// the service is close to its bound; it climbs on evidence instead, a
// few late requests later (median at high 98.5 % against 98.7 % before
// the counts were asked).
//
// Round 10 on an H100 (b32-phases-h100-25ms.json, made by
// bench/gpu/slo_recording.py; one vgg19 trainer, absolute target p99 =
// 25 ms): MPS 70 % held every phase, priority only the low ones. The
// controller is allowed a point below MPS 70 % in a phase: at the medium
// load priority leaves 1.4 % late, a leak that the requests of a 20 s
// phase cannot show (three or four late of 300 is no evidence at a 1 %
// budget), and the controller's step down onto it after a pre-emption
// costs those.
//
// Rounds 12-15 (b32-phases-h100-25ms-rN.json, the same benchmark with
// 22 s phases, from the committed records) are held strictly: where the
// static setting keeps 99 % of a phase in time, so must the controller's
// median, with no slack. Before the prediction at a raised load, trials
// of priority at the high load leaked past the budget in replay as on the
// GPU (rounds 12 and 14 ended their high phase at 98.9 %,
// docs/results/slo-h100-abs.md).
//
// Rounds 18-20 ran the controller with the prediction on the GPU
// (docs/results/slo-h100-predict.md), which held the high phase at
// 99.5-99.8 %. In rounds 18 and 20 MPS 70 % leaked 1.2-1.4 % at high
// load; in replay rung 1 stands for it, and the controller climbs past it
// only on evidence, ending the high phase at a median 0.983-0.987: they
// get a point of slack, the replay's stand-in for the mask, not a fault
// the GPU showed. So do rounds 21 and 23 (controller d737c04,
// docs/results/slo-h100-d737c04.md), where MPS 70 % leaked 1.4 % and
// 1.8 % at high load; round 22, where it held, is held strictly.
func TestControllerOnTheBenchRecording(t *testing.T) {
	phases := []string{"low", "medium", "high", "low-again"}
	const phaseLen = 20 * time.Second
	cases := []struct {
		file   string
		target string
		static string
		// slack is how far below the static setting the controller may be
		// in a phase beyond the draws' noise; strict: where the static
		// setting holds 99 %, so must the controller, noise or not (the
		// issue's acceptance).
		slack  float64
		strict bool
	}{
		{"testdata/b32-phases-h200.json", "p99=20ms", "prio+50%", 0.01, false},
		{"testdata/b32-phases-h100.json", "p99=18.8ms", "hold", 0.03, false},
		{"testdata/b32-phases-h100-25ms.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r12.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r13.json", "p99=25ms", "prio+50%", 0, true},
		{"testdata/b32-phases-h100-25ms-r14.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r15.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r18.json", "p99=25ms", "prio+50%", 0.01, false},
		{"testdata/b32-phases-h100-25ms-r19.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r20.json", "p99=25ms", "prio+50%", 0.01, false},
		{"testdata/b32-phases-h100-25ms-r21.json", "p99=25ms", "prio+50%", 0.01, false},
		{"testdata/b32-phases-h100-25ms-r22.json", "p99=25ms", "prio+70%", 0, true},
		{"testdata/b32-phases-h100-25ms-r23.json", "p99=25ms", "prio+50%", 0.01, false},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			rec := loadRecording(t, tc.file)
			target := MustParse(tc.target)
			atts, staticAtts := make([][]float64, len(phases)), make([][]float64, len(phases))
			var mmk, static float64
			for seed := uint64(1); seed <= 5; seed++ {
				att, train, satt, strain, ds := replayAgainst(t, rec, target, tc.static, phaseLen, seed)
				for i := range phases {
					atts[i] = append(atts[i], att[i])
					staticAtts[i] = append(staticAtts[i], satt[i])
					mmk += train[i] / 20
					static += strain[i] / 20
				}
				// Restrained when the load rose: a climb while it was up,
				// or a rung above 0 held into it (a burst just before the
				// rise pre-empted it).
				var climbed, relaxed, false_ int
				for _, d := range ds {
					preempt := strings.Contains(d.Reason, ": pre-empt: svc's load rose")
					if d.At < phaseLen {
						// The decisions come in time order: the last one
						// before the rise says which rung enters it.
						climbed = 0
						if preempt && d.To > 0 {
							climbed = 1
						}
					}
					if preempt && d.At < phaseLen {
						// Steady Poisson arrivals pass the rise test now and
						// then (SwingAlpha per step); one such a phase is
						// noise, undone if it does not last.
						if false_++; false_ > 1 {
							t.Errorf("seed %d: pre-empted twice in the first phase, with no rise of load: %+v", seed, d)
						}
					}
					switch {
					case d.To > d.From && d.At >= phaseLen && d.At < 3*phaseLen:
						climbed++
					case d.To < d.From:
						relaxed++
					}
				}
				if climbed == 0 || relaxed == 0 {
					t.Errorf("seed %d: %d climbs while the load was up and %d relaxations: %+v", seed, climbed, relaxed, ds)
				}
				t.Logf("seed %d: attainment %.3f, trainers %.3f", seed, att, train)
			}
			for i, p := range phases {
				slices.Sort(atts[i])
				slices.Sort(staticAtts[i])
				m, sm := atts[i][len(atts[i])/2], staticAtts[i][len(staticAtts[i])/2]
				want := sm - max(0.005, 1/(rec.Rates[p]*phaseLen.Seconds())) - tc.slack
				if tc.strict && sm >= 0.99 {
					want = 0.99
				}
				if m < want {
					t.Errorf("%s: median attainment %.3f under the controller, %.3f under %s (%v against %v)", p, m, sm, tc.static, atts[i], staticAtts[i])
				}
				t.Logf("%s: median attainment %.3f under the controller, %.3f under %s", p, m, sm, tc.static)
			}
			if mmk <= static {
				t.Errorf("trainers at %.3f of alone under the controller, %.3f under %s", mmk, static, tc.static)
			}
			t.Logf("trainers %.3f under the controller, %.3f under %s (%.2fx)", mmk, static, tc.static, mmk/static)
		})
	}
}

// mixPick: a setting "mix:A:B:D" stands for B a share D of the time and A
// the rest (a duty-cycled rung); any other setting is itself.
func mixPick(setting string, rng *rand.Rand) string {
	if a, b, d, ok := parseMix(setting); ok {
		if rng.Float64() < d {
			return b
		}
		return a
	}
	return setting
}

// mixSpeed is the trainers' speed of a setting, mixes by their duty.
func mixSpeed(rec benchRecording, setting, phase string) float64 {
	if a, b, d, ok := parseMix(setting); ok {
		return (1-d)*rec.Trainers[a][phase] + d*rec.Trainers[b][phase]
	}
	return rec.Trainers[setting][phase]
}

// parseMix reads a setting "mix:A:B:D" (ok false: not a mix).
func parseMix(setting string) (a, b string, d float64, ok bool) {
	if !strings.HasPrefix(setting, "mix:") {
		return "", "", 0, false
	}
	n, _ := fmt.Sscanf(strings.ReplaceAll(setting, ":", " "), "mix %s %s %g", &a, &b, &d)
	return a, b, d, n == 3
}
