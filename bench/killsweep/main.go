// Command killsweep kills mmkd with SIGKILL under load, again and again,
// and checks that nothing a client was told was accepted is lost,
// duplicated or stuck (issue 54's acceptance: 50 SIGKILLs under load, 0
// lost; restart to ready at most 0.3 s).
//
//	go run ./bench/killsweep -kills 50 -workers 8 -o docs/results/killsweep.md
//
// An mmkd on the fake backend (its kernel schedulers off) takes
// submissions over TCP from -workers clients, each job `true`, each
// submission with an Idempotency-Key of its own; a client whose request
// fails (mmkd killed under it) sends the same request, same key, until
// one is answered, as a careful client would. Every -every (a random
// time between half and one and a half of it) mmkd is killed with
// SIGKILL and started again at once; the time from its start to /readyz
// answering 200 is its restart to ready. After -kills kills the load
// stops and mmkd starts a last time; every job under way then must end
// and the queue move (50 more jobs end). Then every job is listed: lost
// is a job a client was answered for that mmkd does not hold;
// duplicated, two jobs of one key; stuck, a job under way that never
// ended, or any job left when none ended for -settle (each only runs
// `true`). Jobs still queued are counted, not waited for: they start one
// after another.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("killsweep: ")
	var cfg config
	flag.IntVar(&cfg.kills, "kills", 50, "SIGKILLs of mmkd")
	flag.IntVar(&cfg.workers, "workers", 8, "clients submitting at once")
	flag.DurationVar(&cfg.every, "every", time.Second, "mean time between two kills (each uniform in [every/2, 3*every/2])")
	flag.DurationVar(&cfg.settle, "settle", 30*time.Second, "after the last start, how long no job may end before those left count as stuck")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the kill times")
	bin := flag.String("mmkd", "", "mmkd binary (default: built from ./cmd/mmkd)")
	out := flag.String("o", "", "also write the report to this markdown file")
	flag.Parse()
	if cfg.kills < 1 || cfg.workers < 1 || cfg.every <= 0 || cfg.settle <= 0 {
		log.Fatalf("-kills %d, -workers %d, -every %v and -settle %v must be positive", cfg.kills, cfg.workers, cfg.every, cfg.settle)
	}
	tmp, err := os.MkdirTemp("", "mmk-killsweep-")
	if err != nil {
		log.Fatalf("temporary directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	if *bin == "" {
		*bin = filepath.Join(tmp, "mmkd")
		if b, err := exec.Command("go", "build", "-o", *bin, "./cmd/mmkd").CombinedOutput(); err != nil {
			log.Fatalf("build mmkd: %v\n%s", err, b)
		}
	}
	cfg.bin, cfg.data = *bin, filepath.Join(tmp, "data")
	r, err := sweep(cfg, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	report := r.markdown(cfg)
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			log.Fatalf("write %s: %v", *out, err)
		}
	}
	if !r.ok() {
		os.Exit(1)
	}
}
