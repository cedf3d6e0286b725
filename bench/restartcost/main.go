// Command restartcost derives the simulator's table of checkpoint costs
// (sim/jobsim/data/restart-cost.json) from the raw lines that
// bench/gpu/ckpt_cost.py printed on a GPU: per job type the median save
// and restore.
//
//	go run ./bench/restartcost -in docs/results/restart-cost-h100/ckpt.jsonl -o sim/jobsim/data/restart-cost.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/sim/jobsim"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("restartcost: ")
	in := flag.String("in", "docs/results/restart-cost-h100/ckpt.jsonl", "ckpt_cost.py's lines")
	out := flag.String("o", "sim/jobsim/data/restart-cost.json", "the table to write")
	flag.Parse()
	if err := derive(*in, *out); err != nil {
		log.Fatal(err)
	}
}

// derive reads in and writes the table to out.
func derive(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	table, err := jobsim.ReadCheckpointLines(f, in)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	data, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(out, append(data, '\n'))
}
