package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SimJob is one job of a job trace.
type SimJob struct {
	ID      string
	Type    string // a JobType name
	Online  bool
	Arrival time.Duration
	// Work is the job's run time alone on the whole GPU, start-up aside.
	Work time.Duration
	// MemoryMiB is the device memory the job needs.
	MemoryMiB int64
}

// Workload names: MMK's testbed (40 online + 20 offline Table III jobs,
// Poisson arrivals every 40 s on average), MMK's large simulation (800 +
// 400) and the Alibaba openb production trace.
const (
	WorkloadTestbed = "testbed"
	WorkloadLarge   = "large"
	WorkloadOpenB   = "openb"
)

// Durations of synthetic jobs alone on the whole GPU, drawn log-uniformly:
// MMK does not publish its jobs' lengths, so these are mmk's choice (a
// few minutes of inference service, longer training), the same for every
// policy.
var (
	onlineWork  = [2]time.Duration{1 * time.Minute, 5 * time.Minute}
	offlineWork = [2]time.Duration{2 * time.Minute, 15 * time.Minute}
	meanGap     = 40 * time.Second
)

// SyntheticJobs draws MMK's testbed-style workload: online and offline
// jobs of MMK Table III's types, uniformly, shuffled, with Poisson
// arrivals.
func SyntheticJobs(online, offline int, seed uint64) []SimJob {
	rng := rand.New(rand.NewPCG(seed, 0x6a6f6273))
	on, off := jobTypesByKind()
	kinds := make([]bool, 0, online+offline)
	for range online {
		kinds = append(kinds, true)
	}
	for range offline {
		kinds = append(kinds, false)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var out []SimJob
	var t time.Duration
	for i, isOn := range kinds {
		t += time.Duration(rng.ExpFloat64() * float64(meanGap))
		types, span := off, offlineWork
		if isOn {
			types, span = on, onlineWork
		}
		jt := types[rng.IntN(len(types))]
		lo, hi := math.Log(float64(span[0])), math.Log(float64(span[1]))
		work := time.Duration(math.Exp(lo + rng.Float64()*(hi-lo))).Round(time.Second)
		out = append(out, SimJob{ID: fmt.Sprintf("j%04d", i), Type: jt.Name, Online: isOn, Arrival: t, Work: work, MemoryMiB: jt.MemoryMiB})
	}
	return out
}

// ReadOpenB reads the openb pod list (../shared/cluster-traces) as a job
// trace of its first n single-GPU tasks by creation time (n <= 0: all).
// The mapping, documented in docs/results/partition.md:
//   - qos LS and Guaranteed are online jobs, BE and Burstable offline;
//   - the job type is one of Table III's of that kind, chosen by a hash of
//     the pod name (the trace names no model);
//   - gpu_milli (the GPU share the task asked for) is its memory demand:
//     that share of the GPU's memory, and at least the type's own;
//   - arrival is creation_time, work is deletion_time - scheduled_time
//     (the time it ran), both in seconds, relative to the first arrival.
func ReadOpenB(r io.Reader, n int, gpuMemMiB int64) ([]SimJob, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("openb: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{"name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("openb: header lacks column %q", c)
		}
	}
	on, off := jobTypesByKind()
	var out []SimJob
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("openb: %w", err)
		}
		num := func(c string) (int64, error) {
			v, err := strconv.ParseInt(strings.TrimSpace(rec[col[c]]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("openb line %d: column %s: %q is not an integer", line, c, rec[col[c]])
			}
			return v, nil
		}
		gpus, err := num("num_gpu")
		if err != nil {
			return nil, err
		}
		if gpus != 1 || strings.TrimSpace(rec[col["scheduled_time"]]) == "" || strings.TrimSpace(rec[col["deletion_time"]]) == "" {
			continue // several GPUs, or never scheduled or never ended
		}
		var v [4]int64
		for k, c := range []string{"gpu_milli", "creation_time", "scheduled_time", "deletion_time"} {
			if v[k], err = num(c); err != nil {
				return nil, err
			}
		}
		milli, created, sched, deleted := v[0], v[1], v[2], v[3]
		if milli <= 0 || milli > 1000 || deleted <= sched {
			continue // no GPU share, or never ran
		}
		name := rec[col["name"]]
		var isOn bool
		switch q := rec[col["qos"]]; q {
		case "LS", "Guaranteed":
			isOn = true
		case "BE", "Burstable":
		default:
			return nil, fmt.Errorf("openb line %d: qos %q is not one of LS, Guaranteed, BE, Burstable", line, q)
		}
		types := off
		if isOn {
			types = on
		}
		h := fnv.New32a()
		h.Write([]byte(name))
		jt := types[int(h.Sum32()%uint32(len(types)))]
		mem := max(jt.MemoryMiB, milli*gpuMemMiB/1000)
		out = append(out, SimJob{ID: name, Type: jt.Name, Online: isOn, Arrival: time.Duration(created) * time.Second, Work: time.Duration(deleted-sched) * time.Second, MemoryMiB: mem})
	}
	slices.SortStableFunc(out, func(a, b SimJob) int { return int(a.Arrival - b.Arrival) })
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	if len(out) == 0 {
		return nil, errors.New("openb: no single-GPU task with a GPU share")
	}
	first := out[0].Arrival
	for i := range out {
		out[i].Arrival -= first
	}
	return out, nil
}

// LoadWorkload resolves a --workload value: testbed, large, or
// openb[:N] read from dir (the cluster-traces folder).
func LoadWorkload(spec, dir string, seed uint64, gpuMemMiB int64) ([]SimJob, error) {
	name, arg, hasArg := strings.Cut(spec, ":")
	switch name {
	case WorkloadTestbed, WorkloadLarge:
		if hasArg {
			return nil, fmt.Errorf("workload %q: %s takes no :N", spec, name)
		}
		if name == WorkloadTestbed {
			return SyntheticJobs(40, 20, seed), nil
		}
		return SyntheticJobs(800, 400, seed), nil
	case WorkloadOpenB:
		n := 0
		if hasArg {
			v, err := strconv.Atoi(arg)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("workload %q: N %q is not a positive integer", spec, arg)
			}
			n = v
		}
		path := dir + "/openb_pod_list_default.csv"
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w (set --traces to the cluster-traces folder)", spec, err)
		}
		defer f.Close()
		return ReadOpenB(f, n, gpuMemMiB)
	}
	return nil, fmt.Errorf("workload %q is not one of testbed, large, openb[:N]", spec)
}
