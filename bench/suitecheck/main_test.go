package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/sim/slosuite"
)

// TestRoundReplayed: a committed GPU round (the vgg19 benchmark, round
// 86) is read as it ran (its phases of 10 s, each service's rates and
// target, its trainer's model, the controller's rungs) and replayed
// through the suite on the calibrated mix of the same model, each of its
// settings and the controller predicted in every phase.
func TestRoundReplayed(t *testing.T) {
	r, err := readRound("../../docs/results/slo-h200-2026-11-29-mixes/slo-r86")
	if err != nil {
		t.Fatal(err)
	}
	if r.length.Seconds() < 9.5 || r.length.Seconds() > 10.5 {
		t.Errorf("phase length %v, want about 10s", r.length)
	}
	if got := r.rates["svc-b1"]; len(got) != 4 || got[0] != 20 || got[1] != 50 || got[2] != 80 || got[3] != 20 {
		t.Errorf("svc-b1's rates %v, want 20/50/80/20", got)
	}
	if tg := r.targets["svc-b32"]; tg.Percentile != 99 || tg.Bound.Milliseconds() != 25 {
		t.Errorf("svc-b32's target %v, want p99=25ms", tg)
	}
	if strings.Join(r.models, ",") != "vgg19" {
		t.Errorf("models %v, want vgg19", r.models)
	}
	cal, err := slosuite.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config("priority,tpcs=0.25/req,tpcs=0.25,suspend")
	if err != nil {
		t.Fatal(err)
	}
	names, err := serviceMap("svc-b1=r50-b1,svc-b32=r50-b32")
	if err != nil {
		t.Fatal(err)
	}
	p, err := predict(cal, r, names, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.mix != "vgg19:32" {
		t.Errorf("mix %q, want vgg19:32", p.mix)
	}
	for _, s := range []string{"prio", "prio+50%", "reqmask=0.25", "mmk"} {
		cs := p.cells[s]
		if len(cs) != 4 {
			t.Fatalf("setting %s: %d phases predicted", s, len(cs))
		}
		for j, c := range cs {
			if c.attain < 0 || c.attain > 1 || c.speed < 0 || c.speed > 1.5 {
				t.Errorf("setting %s, phase %s: %+v", s, phases[j], c)
			}
		}
	}
	// Priority is faster than MPS 50 % beside vgg19 in the calibration.
	if p.cells["prio"][0].speed <= p.cells["prio+50%"][0].speed {
		t.Errorf("priority %.2f not faster than MPS 50 %% %.2f", p.cells["prio"][0].speed, p.cells["prio+50%"][0].speed)
	}
	var b bytes.Buffer
	if err := report(&b, []string{"vgg19=slo-r86"}, "priority,tpcs=0.25/req,tpcs=0.25,suspend", 2, []mixCheck{{label: "vgg19", rounds: []*round{r}, preds: []*prediction{p}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## vgg19 (calibrated mix vgg19:32), 1 rounds", "| mmk | high |", "| low-again |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCalibratedSettingNames: the benchmark's settings as the
// calibration names them.
func TestCalibratedSettingNames(t *testing.T) {
	for in, want := range map[string]string{"prio": "priority", "reqmask=0.25": "tpcs=0.25/req", "mask=0.5": "tpcs=0.5", "prio+50%": "prio+50%", "hold": "hold", "mmk": "", "together": ""} {
		if got := calibrated(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
