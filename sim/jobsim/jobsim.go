package jobsim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/sim"
	"github.com/mmkgpu/mmk/trace"
)

// Job-level policies: what shares the GPUs.
const (
	// JobDefault: every job on a whole GPU, no limits: time slicing.
	JobDefault = "default"
	// JobMPS: every job under one MPS daemon per GPU, no limits.
	JobMPS = "mps"
	// JobMISO: MIG only, one job per instance, the layout chosen from
	// predicted speeds, reconfigured as jobs come and go; excess jobs
	// wait first come, first served (after MISO, Li et al., SoCC 2022).
	JobMISO = "miso"
	// JobMIGER: MIG instances packed with several jobs each under MPS,
	// percentages and layout tuned from predicted speeds at every event,
	// online or not (after MIGER, Zhang et al., 2024).
	JobMIGER = "miger"
	// JobMMK: Algorithm 1 (MIG only when no online job runs, online
	// shares kept) plus the kernel scheduler's measured effect.
	JobMMK = "mmk"
	// JobMMKAlg1: Algorithm 1 without the kernel scheduler, to separate
	// the two levels' contributions.
	JobMMKAlg1 = "mmk-alg1"
)

// Policies lists the job-level policies.
func Policies() []string {
	return []string{JobDefault, JobMPS, JobMISO, JobMIGER, JobMMK, JobMMKAlg1}
}

// Defaults of the reconfiguration costs.
const (
	// DefaultMIGReconfig is the time a MIG change stops the instances it
	// destroys or creates: an assumption (mmk may not change MIG on the
	// lent GPUs, so it is not measured here); set it to your own
	// measurement of nvidia-smi mig -dci/-dgi/-cgi/-cci.
	DefaultMIGReconfig = 5 * time.Second
)

// DefaultMaxShare is Config.MaxShare when unset: the built-in
// profiles hold runs of up to three jobs together.
const DefaultMaxShare = 3

// Config is one job-level simulation.
type Config struct {
	Jobs   []trace.SimJob
	Model  *partitioner.Model
	GPUs   int
	Policy string
	// Truth is the ground truth of job speeds; Est is what the policies
	// decide with (the predictor).
	Truth *SpeedModel
	Est   partitioner.Estimator
	// Effects is the kernel scheduler's effect per trace pair (JobMMK).
	Effects []KernelEffect
	// MIGReconfig is the time a MIG change costs (0: DefaultMIGReconfig).
	// A job's restart costs its type's measured start-up time.
	MIGReconfig time.Duration
	// MaxShare caps the jobs MPS packs into one instance (MIGER, MMK):
	// the predictor knows nothing beyond the co-runners it was profiled
	// with (0: DefaultMaxShare).
	MaxShare int
	// Progress, when set, is called now and then with finished jobs.
	Progress func(done, total int)
}

// Result is a policy's outcome on a job trace.
type Result struct {
	Policy   string  `json:"policy"`
	Workload string  `json:"workload"`
	AvgJCTS  float64 `json:"avg_jct_s"`
	Makespan float64 `json:"makespan_s"`
	// STP is the sum over jobs of alone time / job completion time.
	STP       float64 `json:"stp"`
	Reconfigs int     `json:"reconfigs"`
	// ReconfigS is the time MIG changes took, summed over GPUs.
	ReconfigS float64 `json:"reconfig_s"`
	Restarts  int     `json:"restarts"`
	// OnlineSlowdown is the mean of online jobs' JCT / alone time.
	OnlineSlowdown float64 `json:"online_slowdown"`
	// PredictionError is the mean relative error of the estimator's
	// speeds against the ground truth, over placements made.
	PredictionError float64 `json:"prediction_error,omitempty"`
	// NormJCT is every finished job's JCT / alone time, ascending.
	NormJCT    []float64 `json:"-"`
	Unfinished int       `json:"unfinished,omitempty"`
	// JobsPerGPU is the mean number of running jobs per GPU over the
	// makespan.
	JobsPerGPU float64 `json:"jobs_per_gpu"`
	// MainLayout is the GPU layout (its profiles) held longest, summed
	// over GPUs, and MainLayoutShare its share of GPU time; empty for
	// policies without MIG.
	MainLayout      string  `json:"main_layout,omitempty"`
	MainLayoutShare float64 `json:"main_layout_share,omitempty"`
}

// simJob is a job's state in the simulation (times in seconds).
type simJob struct {
	trace.SimJob
	alone     float64 // work + start-up
	startup   float64
	remaining float64 // seconds of work alone
	speed     float64
	paused    float64 // no progress before this time
	gpu       int     // -1 while waiting
	finish    float64
	done      bool
}

type jobSim struct {
	cfg     Config
	jobs    []*simJob
	byID    map[string]*simJob
	pending []*simJob
	now     float64
	res     Result
	// Partitioned policies: each GPU's plan. Shared ones: jobs per GPU.
	plans  []partitioner.GPUPlan
	shared [][]*simJob
	opts   partitioner.Options
	effect map[[2]string]KernelEffect
	// predErr sums |predicted - true| / true over placements.
	predErr float64
	predN   int
	// jobTime sums running jobs × seconds; layoutTime seconds per layout.
	jobTime    float64
	layoutTime map[string]float64
}

// Simulate runs one policy on a job trace.
func Simulate(cfg Config) (*Result, error) {
	if cfg.GPUs <= 0 {
		return nil, fmt.Errorf("job sim: gpus %d: want at least 1", cfg.GPUs)
	}
	if cfg.Model == nil || cfg.Truth == nil {
		return nil, errors.New("job sim: need a GPU model and a ground truth")
	}
	if cfg.MaxShare == 0 {
		cfg.MaxShare = DefaultMaxShare
	}
	if cfg.MIGReconfig == 0 {
		cfg.MIGReconfig = DefaultMIGReconfig
	}
	s := &jobSim{cfg: cfg, byID: map[string]*simJob{}, res: Result{Policy: cfg.Policy}, effect: map[[2]string]KernelEffect{}}
	switch cfg.Policy {
	case JobDefault, JobMPS:
		s.shared = make([][]*simJob, cfg.GPUs)
	case JobMISO:
		s.opts = partitioner.Options{MIGUnderOnline: true, MaxJobsPerInstance: 1, ArrivalOrder: true}
	case JobMIGER:
		s.opts = partitioner.Options{MIGUnderOnline: true, MaxJobsPerInstance: cfg.MaxShare}
	case JobMMK, JobMMKAlg1:
		s.opts = partitioner.Options{FixOnlinePercent: true, MaxJobsPerInstance: cfg.MaxShare}
	default:
		return nil, fmt.Errorf("job sim: policy %q is not one of %v", cfg.Policy, Policies())
	}
	if s.shared == nil {
		if cfg.Est == nil {
			return nil, fmt.Errorf("job sim: policy %s needs an estimator", cfg.Policy)
		}
		s.cfg.Est = partitioner.NewCache(cfg.Est)
		whole, err := partitioner.ParseLayout(cfg.Model, cfg.Model.Profiles[len(cfg.Model.Profiles)-1].Name)
		if err != nil {
			return nil, fmt.Errorf("job sim: whole-GPU layout: %w", err)
		}
		s.plans = make([]partitioner.GPUPlan, cfg.GPUs)
		for g := range s.plans {
			s.plans[g].Layout = whole
		}
	}
	if cfg.Policy == JobMMK {
		for _, e := range cfg.Effects {
			s.effect[[2]string{e.Online, e.Offline}] = e
		}
	}
	for _, j := range cfg.Jobs {
		jt, ok := trace.LookupJobType(j.Type)
		if !ok || !cfg.Truth.Has(j.Type) {
			return nil, fmt.Errorf("job sim: job %s: unknown job type %q", j.ID, j.Type)
		}
		if _, dup := s.byID[j.ID]; dup {
			return nil, fmt.Errorf("job sim: job id %q is given twice", j.ID)
		}
		if j.Work <= 0 {
			return nil, fmt.Errorf("job sim: job %s: work %v: want > 0", j.ID, j.Work)
		}
		sj := &simJob{SimJob: j, startup: jt.Startup.Seconds(), remaining: j.Work.Seconds(), gpu: -1}
		sj.alone = sj.remaining + sj.startup
		s.jobs = append(s.jobs, sj)
		s.byID[j.ID] = sj
	}
	slices.SortStableFunc(s.jobs, func(a, b *simJob) int { return int(a.Arrival - b.Arrival) })
	if err := s.run(); err != nil {
		return nil, err
	}
	return &s.res, nil
}

func (s *jobSim) running() []*simJob {
	var out []*simJob
	for _, j := range s.jobs {
		if j.gpu >= 0 && !j.done {
			out = append(out, j)
		}
	}
	return out
}

func (s *jobSim) run() error {
	next, finished, reported := 0, 0, -1
	for finished < len(s.jobs) {
		t := math.Inf(1)
		if next < len(s.jobs) {
			t = s.jobs[next].Arrival.Seconds()
		}
		run := s.running()
		for _, j := range run {
			switch {
			case j.paused > s.now:
				t = min(t, j.paused)
			case j.speed > 0:
				t = min(t, s.now+j.remaining/j.speed)
			}
		}
		if math.IsInf(t, 1) {
			s.res.Unfinished = len(s.jobs) - finished
			break // what waits can never be placed
		}
		for _, j := range run {
			if j.paused <= s.now {
				j.remaining -= j.speed * (t - s.now)
			}
		}
		s.account(t-s.now, len(run))
		s.now = t
		changed := false
		for _, j := range run {
			if j.paused <= s.now && j.remaining <= 1e-9*j.alone {
				j.done, j.finish, changed = true, s.now, true
				finished++
				s.remove(j)
			}
		}
		for next < len(s.jobs) && s.jobs[next].Arrival.Seconds() <= s.now {
			s.pending = append(s.pending, s.jobs[next])
			next++
			changed = true
		}
		if !changed {
			continue
		}
		if err := s.decide(); err != nil {
			return fmt.Errorf("job sim %s at %.0f s: %w", s.cfg.Policy, s.now, err)
		}
		s.speeds()
		if s.cfg.Progress != nil && finished != reported {
			reported = finished
			s.cfg.Progress(finished, len(s.jobs))
		}
	}
	s.metrics()
	return nil
}

// account adds dt seconds with n jobs running to the occupancy metrics.
func (s *jobSim) account(dt float64, n int) {
	s.jobTime += dt * float64(n)
	for _, g := range s.plans {
		if s.layoutTime == nil {
			s.layoutTime = map[string]float64{}
		}
		s.layoutTime[g.Layout.Profiles()] += dt
	}
}

// remove takes a finished job off its GPU.
func (s *jobSim) remove(j *simJob) {
	if s.shared != nil {
		s.shared[j.gpu] = slices.DeleteFunc(s.shared[j.gpu], func(o *simJob) bool { return o == j })
		return
	}
	p := &s.plans[j.gpu]
	p.Jobs = slices.DeleteFunc(p.Jobs, func(o partitioner.Placed) bool { return o.Job.ID == j.ID })
}

// maxMPSClients is the most clients one MPS server takes (Volta and later).
const maxMPSClients = 48

func (s *jobSim) decide() error {
	if s.shared != nil {
		// First come, first served, backfilling: each waiting job goes to
		// the GPU with the most free memory that holds it.
		var still []*simJob
		for _, j := range s.pending {
			best, bestFree := -1, int64(-1)
			for g, js := range s.shared {
				free := s.cfg.Model.MemoryMiB
				for _, o := range js {
					free -= o.MemoryMiB
				}
				if free >= j.MemoryMiB && free > bestFree && (s.cfg.Policy != JobMPS || len(js) < maxMPSClients) {
					best, bestFree = g, free
				}
			}
			if best < 0 {
				still = append(still, j)
				continue
			}
			j.gpu, j.paused = best, s.now+j.startup
			s.shared[best] = append(s.shared[best], j)
		}
		s.pending = still
		return nil
	}
	req := partitioner.Request{GPUs: s.plans}
	for _, j := range s.pending {
		req.Pending = append(req.Pending, partitioner.Job{ID: j.ID, Type: j.Type, Online: j.Online, MemoryMiB: j.MemoryMiB})
	}
	plan, err := partitioner.Decide(req, s.cfg.Est, s.opts)
	if err != nil {
		return err
	}
	for _, ch := range plan.Changes {
		kept := map[string]bool{}
		mig := 0.0
		if ch.MIG != nil {
			s.res.Reconfigs++
			s.res.ReconfigS += s.cfg.MIGReconfig.Seconds()
			mig = s.cfg.MIGReconfig.Seconds()
			for _, gi := range ch.MIG.Kept {
				kept[gi.String()] = true
			}
		}
		inst := map[string]string{}
		for _, p := range plan.GPUs[ch.GPU].Jobs {
			inst[p.Job.ID] = plan.GPUs[ch.GPU].Layout.Instances[p.Instance].String()
		}
		delay := func(j *simJob) float64 {
			if ch.MIG != nil && !kept[inst[j.ID]] {
				return mig + j.startup
			}
			return j.startup
		}
		for _, id := range ch.Restart {
			j := s.byID[id]
			j.paused = s.now + delay(j)
			s.res.Restarts++
		}
		for _, id := range ch.Start {
			j := s.byID[id]
			j.gpu, j.paused = ch.GPU, s.now+delay(j)
		}
	}
	s.plans = plan.GPUs
	waiting := map[string]bool{}
	for _, j := range plan.Waiting {
		waiting[j.ID] = true
	}
	s.pending = slices.DeleteFunc(s.pending, func(j *simJob) bool { return !waiting[j.ID] })
	return nil
}

// speeds sets every running job's true speed.
func (s *jobSim) speeds() {
	truth := s.cfg.Truth
	if s.shared != nil {
		gpu := sim.DefaultGPU()
		for _, js := range s.shared {
			busy := 0.0
			for _, j := range js {
				if s.cfg.Policy == JobDefault {
					busy += truth.gpuBusy[j.Type]
				} else {
					busy += truth.smBusy[j.Type]
				}
			}
			share := 1 / max(1, busy)
			for _, j := range js {
				if s.cfg.Policy == JobDefault {
					// Time slicing: each context gets its turn; a switch
					// costs what the calibrated kernel-level GPU says.
					j.speed = truth.Alone(j.Type, 100) * share
					if len(js) > 1 {
						j.speed *= gpu.Slice.Seconds() / (gpu.Slice + gpu.Switch).Seconds()
					}
					continue
				}
				// MPS without limits: SM time is shared in proportion to
				// demand, so each job runs as at share·100 % next to the
				// others at theirs.
				var co []CoShare
				for _, o := range js {
					if o != j {
						co = append(co, CoShare{Job: o.Type, Pct: 100 * share})
					}
				}
				j.speed = truth.Shared(j.Type, 100*share, co)
			}
		}
		return
	}
	gpuSMs := s.cfg.Model.SMs
	for _, p := range s.plans {
		for i, in := range p.Layout.Instances {
			var here []partitioner.Placed
			for _, pl := range p.Jobs {
				if pl.Instance == i {
					here = append(here, pl)
				}
			}
			frac := float64(in.Profile.SMs) / float64(gpuSMs)
			for _, pl := range here {
				j := s.byID[pl.Job.ID]
				pct := float64(pl.Percent) * frac
				if s.cfg.Policy == JobMISO {
					pct = 100 * frac // MIG only: no MPS limit
				}
				var co []CoShare
				for _, o := range here {
					if o.Job.ID != pl.Job.ID {
						co = append(co, CoShare{Job: o.Job.Type, Pct: float64(o.Percent) * frac})
					}
				}
				j.speed = truth.Shared(j.Type, pct, co)
				s.predErr += math.Abs(pl.Speed-j.speed) / j.speed
				s.predN++
				if s.cfg.Policy == JobMMK {
					j.speed = s.kernelEffect(j, pct, here, j.speed)
				}
			}
		}
	}
}

// kernelEffect applies the kernel scheduler's measured effect to a job
// sharing an instance: an online job gains the mean speed-up measured
// against its offline co-runners (never beyond its speed alone at its
// share), an offline job keeps the smallest share measured next to its
// online co-runners.
func (s *jobSim) kernelEffect(j *simJob, pct float64, here []partitioner.Placed, speed float64) float64 {
	jt, _ := trace.LookupJobType(j.Type)
	gain, n, kept := 0.0, 0, 1.0
	for _, o := range here {
		if o.Job.Online == j.Online {
			continue
		}
		ot, _ := trace.LookupJobType(o.Job.Type)
		if j.Online {
			if e, ok := s.effect[[2]string{jt.Trace, ot.Trace}]; ok {
				gain += e.OnlineSpeedup
				n++
			}
		} else if e, ok := s.effect[[2]string{ot.Trace, jt.Trace}]; ok {
			kept = min(kept, e.OfflineKept)
		}
	}
	if j.Online {
		if n == 0 {
			return speed
		}
		return min(s.cfg.Truth.Alone(j.Type, pct), speed*gain/float64(n))
	}
	return speed * kept
}

func (s *jobSim) metrics() {
	r := &s.res
	first, last := math.Inf(1), 0.0
	sum, on, onN := 0.0, 0.0, 0
	for _, j := range s.jobs {
		first = min(first, j.Arrival.Seconds())
		if !j.done {
			continue
		}
		jct := j.finish - j.Arrival.Seconds()
		last = max(last, j.finish)
		sum += jct
		r.STP += j.alone / jct
		r.NormJCT = append(r.NormJCT, jct/j.alone)
		if j.Online {
			on += jct / j.alone
			onN++
		}
	}
	if n := len(r.NormJCT); n > 0 {
		r.AvgJCTS = sum / float64(n)
		r.Makespan = last - first
	}
	if onN > 0 {
		r.OnlineSlowdown = on / float64(onN)
	}
	if s.predN > 0 {
		r.PredictionError = s.predErr / float64(s.predN)
	}
	if r.Makespan > 0 {
		r.JobsPerGPU = s.jobTime / r.Makespan / float64(s.cfg.GPUs)
	}
	total := 0.0
	for _, l := range slices.Sorted(maps.Keys(s.layoutTime)) { // a fixed order: sums are exact to the bit
		t := s.layoutTime[l]
		total += t
		if t > r.MainLayoutShare || (t == r.MainLayoutShare && l < r.MainLayout) {
			r.MainLayout, r.MainLayoutShare = l, t
		}
	}
	if total > 0 {
		r.MainLayoutShare /= total
	}
	slices.Sort(r.NormJCT)
}
