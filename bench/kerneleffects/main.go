// Command kerneleffects regenerates sim/jobsim/data/kernel-effects.json: for
// every pair of an online and an offline built-in trace, what MMK's kernel
// policy does to both when they share an instance under MPS, measured in
// the kernel-level simulator (jobsim.MeasureKernelEffect). The job-level
// simulator reads the table for its MMK policy.
//
//	go run ./bench/kerneleffects -o sim/jobsim/data/kernel-effects.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/internal/progress"
	"github.com/mmkgpu/mmk/sim/jobsim"
	"github.com/mmkgpu/mmk/trace"
)

func main() {
	out := flag.String("o", "sim/jobsim/data/kernel-effects.json", "output file")
	policy := flag.String("policy", "fikit+mmk", "kernel policy")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*out, *policy, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "kerneleffects:", err)
		os.Exit(1)
	}
}

func run(out, policy string, seed uint64) error {
	var pairs [][2]string
	for _, on := range trace.JobTraceOnline() {
		for _, off := range trace.JobTraceOffline() {
			pairs = append(pairs, [2]string{on, off})
		}
	}
	effects := make([]jobsim.KernelEffect, len(pairs))
	prog := progress.New(os.Stderr)
	for i, p := range pairs {
		var err error
		if effects[i], err = jobsim.MeasureKernelEffect(p[0], p[1], policy, seed); err != nil {
			return err
		}
		prog.Updatef(i+1, len(pairs), "%d/%d pairs", i+1, len(pairs))
	}
	prog.End()
	b, err := json.MarshalIndent(effects, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(out, append(b, '\n'))
}
