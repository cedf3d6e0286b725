// Command suitecheck checks the scenario suite's plant (sim/slosuite: each
// service's service times per setting beside a trainer mix, as calibrated
// on the GPU, the queue model, and the latency controller stepped on
// them) against GPU rounds of the SLO benchmark of the same case: the
// same calibrated mix and services, the rounds' rates, targets and phase
// lengths, each static setting and the controller on the same ladder.
// Per mix, setting and phase it prints the lowest attainment of the
// services and the trainers' speed against alone, as the rounds measured
// them (median over rounds) and as the suite predicts them (median over
// -seeds draws of the arrivals), and the controller's time on each rung.
//
//	go run ./bench/suitecheck -o docs/results/suitecheck-h200.md \
//	  three=docs/results/slo-h200-2026-11-29-mixes/slo-r80,... vgg19=...
//
// A round's trainers name the calibrated mix (the one with the same
// models), -services maps its services to the calibration's, and its
// settings map to calibrated ones (prio: priority, reqmask=F: tpcs=F/req,
// mask=F: tpcs=F; MPS shares and hold as named; mmk: the controller).
// What the suite leaves out is named in the report: the controller's
// stop bound (a suspension ends after 30 s on the GPU) among it.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/mmkgpu/mmk/sim/slosuite"
	"github.com/mmkgpu/mmk/slo"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("suitecheck: ")
	ladder := flag.String("ladder", "priority,tpcs=0.25/req,tpcs=0.25,suspend", "the controller's ladder in the rounds (setting mmk)")
	services := flag.String("services", "svc-b1=r50-b1,svc-b32=r50-b32,svc-bert=bert-b8", "the rounds' services as the calibration names them")
	seeds := flag.Int("seeds", 20, "draws of the arrivals per round")
	out := flag.String("o", "", "also write the report to this markdown file")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: suitecheck [flags] MIX=DIR[,DIR...] ...")
	}
	cfg, err := config(*ladder)
	if err != nil {
		log.Fatal(err)
	}
	names, err := serviceMap(*services)
	if err != nil {
		log.Fatal(err)
	}
	cal, err := slosuite.Builtin()
	if err != nil {
		log.Fatal(err)
	}
	var mixes []mixCheck
	for _, arg := range flag.Args() {
		label, dirs, ok := strings.Cut(arg, "=")
		if !ok || label == "" || dirs == "" {
			log.Fatalf("%q: want MIX=DIR[,DIR...]", arg)
		}
		m := mixCheck{label: label}
		for _, d := range strings.Split(dirs, ",") {
			r, err := readRound(d)
			if err != nil {
				log.Fatal(err)
			}
			p, err := predict(cal, r, names, cfg, *seeds)
			if err != nil {
				log.Fatal(err)
			}
			m.rounds = append(m.rounds, r)
			m.preds = append(m.preds, p)
		}
		mixes = append(mixes, m)
	}
	w := io.Writer(os.Stdout)
	var f *os.File
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			log.Fatal(err)
		}
		w = io.MultiWriter(os.Stdout, f)
	}
	if err := report(w, os.Args[1:], *ladder, *seeds, mixes); err != nil {
		log.Fatal(err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// config is the controller's configuration on the GPU: the defaults (the
// kernel scheduler's), on ladder.
func config(ladder string) (slo.Config, error) {
	cfg := slo.DefaultConfig()
	l, err := slo.ParseLadder(strings.Split(ladder, ","))
	if err == nil {
		err = l.Check()
	}
	if err != nil {
		return cfg, fmt.Errorf("flag -ladder: %w", err)
	}
	cfg.Ladder = l
	return cfg, nil
}

// serviceMap reads -services: NAME=CALIBRATED, comma-separated.
func serviceMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("flag -services: %q is not NAME=CALIBRATED", kv)
		}
		out[k] = v
	}
	return out, nil
}
