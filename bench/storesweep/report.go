package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// describe says what the template store holds.
func describe(want []expected, used, size int) string {
	counts := map[string]int{}
	for _, w := range want {
		counts[string(w.State)]++
	}
	return fmt.Sprintf("%.2f MiB of pages in a file of %.2f MiB, %d jobs (%d running, %d queued, %d succeeded), each with an idempotency key",
		float64(used)/(1<<20), float64(size)/(1<<20), len(want), counts["running"], counts["pending"], counts["succeeded"])
}

// clean reports a case that met the bar: no crash, no hang, nothing
// lost or changed.
func clean(r result) bool {
	return (r.Outcome == outReady || r.Outcome == outRefused) && len(r.Lost)+len(r.LostKeys)+len(r.Changed) == 0
}

// report is the Markdown report: the setup, a row per flip count and
// the cases that were not clean.
func report(c config, store string, results, before []result, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Job store corruption sweep\n\n")
	fmt.Fprintf(&b, "`go run ./bench/storesweep %s`\n\n", strings.Join(flagsUsed(c), " "))
	fmt.Fprintf(&b, "Store: `%s`, %s; its backup beside it (taken last, as mmkd takes one). "+
		"Each case flips random bytes anywhere in a copy (seeded: `rand.NewPCG(seed, flips)`) and starts the real mmkd on it "+
		"(fake backend, a data directory of its own, the predictor's cache copied in). "+
		"%d cases, %d mmkd at once, on %d cores, %v in all.\n\n",
		c.template, store, len(results), c.parallel, runtime.NumCPU(), took.Round(time.Second))
	b.WriteString("A crash is a signal, exit status 2 or the Go runtime's words at the start of a line of mmkd's output; " +
		"hung is neither ready nor stopped within the bound; refused is a stop with an error, store and backup untouched. " +
		"Once ready, the store mmkd leaves is read as it is (bbolt, read-only): a lost job is one it no longer holds; " +
		"a lost key an idempotency key that does not name its job (a retry would make a new one; the key of a lost job counts with the job); " +
		"changed a job kept damaged: in a state its start does not explain (queued and ended jobs keep theirs; a running job, whose " +
		"process the sweep never started, is failed by mmkd or stays running), of another spec, or with events that cannot be read. " +
		"Set aside are the records mmkd found unreadable, put back those it took from the backup again.\n\n")
	b.WriteString(table(results))
	if len(before) > 0 {
		fmt.Fprintf(&b, "\nBefore the fixes of this sweep (the same command on the mmkd of that time; raw lines `%s`):\n\n", c.before)
		b.WriteString(table(before))
	}
	var odd []result
	for _, r := range results {
		if !clean(r) || r.Outcome == outRefused || r.SetAside > 0 {
			odd = append(odd, r)
		}
	}
	if len(odd) > 0 {
		b.WriteString("\nCases that were not clean, refused, or set records aside:\n\n")
		b.WriteString("| flips | seed | outcome | restored | set aside | put back | s | detail |\n|---:|---:|---|---|---:|---:|---:|---|\n")
		for _, r := range odd {
			fmt.Fprintf(&b, "| %d | %d | %s | %v | %d | %d | %.2f | %s |\n", r.Flips, r.Seed, r.Outcome, r.Restored, r.SetAside, r.PutBack, r.Seconds,
				strings.ReplaceAll(r.Detail, "|", "\\|"))
		}
	}
	return b.String()
}

// table is a row per flip count.
func table(results []result) string {
	var b strings.Builder
	b.WriteString("| flips | cases | crashes | hung | lost jobs | lost keys | changed | restored | kept | refused | set aside | put back | meta page hit | median s | max s |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var order []int
	by := map[int][]result{}
	for _, r := range results {
		if _, ok := by[r.Flips]; !ok {
			order = append(order, r.Flips)
		}
		by[r.Flips] = append(by[r.Flips], r)
	}
	for _, f := range order {
		rs := by[f]
		var crash, hung, lost, keys, changed, restored, kept, refused, aside, back, meta int
		var secs []float64
		for _, r := range rs {
			switch r.Outcome {
			case outCrash, outChanged:
				crash++
			case outHung:
				hung++
			case outRefused:
				refused++
			case outReady:
				if r.Restored {
					restored++
				} else {
					kept++
				}
			}
			lost += len(r.Lost)
			keys += len(r.LostKeys)
			changed += len(r.Changed)
			aside += r.SetAside
			back += r.PutBack
			if r.MetaHit {
				meta++
			}
			secs = append(secs, r.Seconds)
		}
		slices.Sort(secs)
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %.2f | %.2f |\n",
			f, len(rs), crash, hung, lost, keys, changed, restored, kept, refused, aside, back, meta, secs[len(secs)/2], secs[len(secs)-1])
	}
	return b.String()
}

// flagsUsed are the flags that reproduce the run.
func flagsUsed(c config) []string {
	out := []string{fmt.Sprintf("-seeds %d", c.seeds), "-flips " + c.flips, fmt.Sprintf("-parallel %d", c.parallel)}
	if c.only != "" {
		out = append(out, "-only "+c.only)
	}
	if c.md != "" {
		out = append(out, "-o "+c.md)
	}
	if c.jsonl != "" {
		out = append(out, "-jsonl "+c.jsonl)
	}
	if c.before != "" {
		out = append(out, "-before "+c.before)
	}
	return out
}
