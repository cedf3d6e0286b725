package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// SimJob is one job of a job trace.
type SimJob struct {
	ID      string
	Type    string // a JobType name
	Online  bool
	Arrival time.Duration
	// Work is, for an offline job, its run time alone on the whole GPU,
	// start-up aside; for an online job (a service), how long requests
	// keep arriving.
	Work time.Duration
	// Load is an online job's request load: the fraction of time its
	// requests keep it busy alone on the whole GPU (requests arrive at
	// Load / latency-alone per second). Zero for offline jobs.
	Load float64
	// MemoryMiB is the device memory the job needs.
	MemoryMiB int64
	// SLO is an online job's latency target, as mmkd takes it (a ratio
	// bound is a multiple of the service's latency at that percentile
	// alone); zero: the simulation's default.
	SLO slo.Target
}

// Workload names: MMK's testbed (40 online + 20 offline Table III jobs),
// MMK's large simulation (800 + 400) and the Alibaba openb production
// trace.
const (
	WorkloadTestbed = "testbed"
	WorkloadLarge   = "large"
	WorkloadOpenB   = "openb"
)

// Durations and loads of synthetic jobs, drawn log-uniformly (durations)
// and uniformly (loads): MMK does not publish its jobs' lengths, so these
// are mmk's choice (a few minutes of inference service, each busy 5-25 %
// of a whole GPU, longer training), the same for every policy.
var (
	onlineWork  = [2]time.Duration{1 * time.Minute, 5 * time.Minute}
	offlineWork = [2]time.Duration{2 * time.Minute, 15 * time.Minute}
	onlineLoad  = [2]float64{0.05, 0.25}
)

// Synthetic is a synthetic workload: how many jobs of each kind, and the
// load they put on GPUs.
type Synthetic struct {
	Online, Offline int
	// GPUs and Load set the arrival rate: jobs arrive (Poisson) so that
	// the GPU work they bring per second, on average, is Load times the
	// GPUs (an offline job brings its Work, an online one Work x Load).
	GPUs int
	Load float64
}

// DefaultLoad is the load of the built-in synthetic workloads when none
// is given: the GPUs are offered as much work as they can do alone.
const DefaultLoad = 1.0

// logUniformMean is the mean of a log-uniform draw on [lo, hi].
func logUniformMean(span [2]time.Duration) float64 {
	lo, hi := span[0].Seconds(), span[1].Seconds()
	return (hi - lo) / math.Log(hi/lo)
}

// MeanGap is the mean time between arrivals that gives the load.
func (s Synthetic) MeanGap() time.Duration {
	n := s.Online + s.Offline
	if n == 0 || s.GPUs <= 0 || s.Load <= 0 {
		return 0
	}
	onWork := logUniformMean(onlineWork) * (onlineLoad[0] + onlineLoad[1]) / 2
	work := (float64(s.Online)*onWork + float64(s.Offline)*logUniformMean(offlineWork)) / float64(n)
	return time.Duration(work / (s.Load * float64(s.GPUs)) * float64(time.Second))
}

// SyntheticJobs draws a testbed-style workload: online and offline jobs
// of MMK Table III's types, uniformly, shuffled, with Poisson arrivals at
// the workload's load.
func SyntheticJobs(s Synthetic, seed uint64) ([]SimJob, error) {
	if s.Online < 0 || s.Offline < 0 || s.Online+s.Offline == 0 {
		return nil, fmt.Errorf("synthetic workload: %d online and %d offline jobs: want at least one, none negative", s.Online, s.Offline)
	}
	if s.GPUs <= 0 {
		return nil, fmt.Errorf("synthetic workload: gpus %d: want at least 1", s.GPUs)
	}
	if !(s.Load > 0) || math.IsInf(s.Load, 0) {
		return nil, fmt.Errorf("synthetic workload: load %v: want a number > 0", s.Load)
	}
	gap := float64(s.MeanGap())
	rng := rand.New(rand.NewPCG(seed, 0x6a6f6273))
	on, off := jobTypesByKind()
	kinds := make([]bool, 0, s.Online+s.Offline)
	for range s.Online {
		kinds = append(kinds, true)
	}
	for range s.Offline {
		kinds = append(kinds, false)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var out []SimJob
	var t time.Duration
	for i, isOn := range kinds {
		t += time.Duration(rng.ExpFloat64() * gap)
		types, span := off, offlineWork
		if isOn {
			types, span = on, onlineWork
		}
		jt := types[rng.IntN(len(types))]
		lo, hi := math.Log(float64(span[0])), math.Log(float64(span[1]))
		work := time.Duration(math.Exp(lo + rng.Float64()*(hi-lo))).Round(time.Second)
		j := SimJob{ID: fmt.Sprintf("j%04d", i), Type: jt.Name, Online: isOn, Arrival: t, Work: work, MemoryMiB: jt.MemoryMiB}
		if isOn {
			j.Load = onlineLoad[0] + rng.Float64()*(onlineLoad[1]-onlineLoad[0])
		}
		out = append(out, j)
	}
	return out, nil
}

// WorkloadOptions are what LoadWorkload needs besides the workload's name.
type WorkloadOptions struct {
	// Traces is the folder of openb_pod_list_default.csv, or a pod list
	// file of any variant of the openb trace.
	Traces string
	// Seed draws the synthetic workloads.
	Seed uint64
	// GPUs and Load set a synthetic workload's arrival rate (Load 0:
	// DefaultLoad); openb's recorded arrivals are load 1, and a Load L
	// divides their times by L.
	GPUs int
	Load float64
	// GPUMemMiB is the simulated GPU's memory: openb's GPU shares are
	// shares of it.
	GPUMemMiB int64
	// SLOs are the services' latency targets: each service draws one,
	// uniformly (from Seed, apart from the draws of the jobs themselves,
	// so that the same jobs arrive whatever the targets). None: every
	// service keeps the simulation's default.
	SLOs []slo.Target
}

// AssignSLOs gives each online job one of targets, drawn uniformly from
// seed on a stream of its own; none leaves the jobs as they are.
func AssignSLOs(jobs []SimJob, targets []slo.Target, seed uint64) {
	if len(targets) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x736c6f73))
	for i := range jobs {
		if jobs[i].Online {
			jobs[i].SLO = targets[rng.IntN(len(targets))]
		}
	}
}

// LoadWorkload resolves a --workload value: testbed, large, or
// openb[:N] read from opt.Traces.
func LoadWorkload(spec string, opt WorkloadOptions) ([]SimJob, error) {
	name, arg, hasArg := strings.Cut(spec, ":")
	switch name {
	case WorkloadTestbed, WorkloadLarge:
		if hasArg {
			return nil, fmt.Errorf("workload %q: %s takes no :N", spec, name)
		}
		s := Synthetic{Online: 40, Offline: 20, GPUs: opt.GPUs, Load: opt.Load}
		if name == WorkloadLarge {
			s.Online, s.Offline = 800, 400
		}
		if s.Load == 0 {
			s.Load = DefaultLoad
		}
		jobs, err := SyntheticJobs(s, opt.Seed)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", spec, err)
		}
		AssignSLOs(jobs, opt.SLOs, opt.Seed)
		return jobs, nil
	case WorkloadOpenB:
		n := 0
		if hasArg {
			v, err := strconv.Atoi(arg)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("workload %q: N %q is not a positive integer", spec, arg)
			}
			n = v
		}
		path := opt.Traces
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path += "/openb_pod_list_default.csv"
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w (set --traces to the cluster-traces folder or a pod list)", spec, err)
		}
		defer f.Close()
		pods, err := ReadOpenBPods(f)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %s: %w", spec, path, err)
		}
		jobs, err := OpenBJobs(pods, n, opt.GPUMemMiB)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %s: %w", spec, path, err)
		}
		if opt.Load < 0 || math.IsNaN(opt.Load) || math.IsInf(opt.Load, 0) {
			return nil, fmt.Errorf("workload %s: load %v: want a number > 0", spec, opt.Load)
		}
		if opt.Load > 0 && opt.Load != 1 {
			// The recorded arrivals are load 1: a load L arrives L times
			// as fast, the same jobs.
			for i := range jobs {
				jobs[i].Arrival = time.Duration(float64(jobs[i].Arrival) / opt.Load)
			}
		}
		AssignSLOs(jobs, opt.SLOs, opt.Seed)
		return jobs, nil
	}
	return nil, errors.New("workload " + strconv.Quote(spec) + " is not one of testbed, large, openb[:N]")
}
