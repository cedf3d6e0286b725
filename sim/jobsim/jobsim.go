package jobsim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/baselines"
	"github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

// DefaultMaxShare is Config.MaxShare when unset: no cap but MPS's own
// limit of clients, as mmkd runs (the built-in profiles hold runs of up
// to three jobs together, and a cap of 3 cost JCT without raising SLO
// attainment: docs/results/partition.md, the section on caps).
const DefaultMaxShare = MaxMPSClients

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
	// Effects is the kernel scheduler's effect per trace pair (policies
	// with the kernel option).
	Effects []KernelEffect
	// Costs are the MIG change time and the checkpoint costs; a job's
	// start costs its type's measured start-up time besides.
	Costs Costs
	// MaxShare caps the jobs MPS packs into one instance (Algorithm 1's
	// policies; 0: DefaultMaxShare).
	MaxShare int
	// SLOFactor sets the latency target of online jobs that carry none
	// (trace.SimJob.SLO): 99 % of requests within this many times the
	// latency of one request alone on the whole GPU (0: DefaultSLOFactor).
	SLOFactor float64
	// SLOHeadroom is the slowdown an online job's need leaves room for
	// under the slo option (0: DefaultSLOHeadroom).
	SLOHeadroom float64
	// SLOMaxWait is how long a service waits for a place that holds its
	// target under the slo option before it goes where it fits, need or
	// not (0: DefaultSLOMaxWait; negative: as long as it takes).
	SLOMaxWait time.Duration
	// Seed draws the online jobs' requests.
	Seed uint64
	// OracleError is the error of the oracle option's answers: each is
	// off by exp(OracleError·z), z standard normal per question (0: the
	// ground truth itself).
	OracleError float64
	// Progress, when set, is called now and then with finished jobs.
	Progress func(done, total int)
	// OnPlan, when set, is given every plan Algorithm 1's policies make:
	// what they placed together (predictor.Placements turns the groups
	// into the profiling campaign's runs).
	OnPlan func(plan *partitioner.Plan)
}

// Result is a policy's outcome on a job trace.
type Result struct {
	Policy   string `json:"policy"`
	Workload string `json:"workload"`
	// AvgJCTS is the mean job completion time of all jobs (an online
	// job completes when its last request is served), BatchJCTS of the
	// offline jobs.
	AvgJCTS   float64 `json:"avg_jct_s"`
	BatchJCTS float64 `json:"batch_jct_s"`
	Makespan  float64 `json:"makespan_s"`
	// STP is the sum over jobs of alone time / job completion time.
	STP       float64 `json:"stp"`
	Reconfigs int     `json:"reconfigs"`
	// ReconfigS is the time MIG changes took, summed over GPUs.
	ReconfigS float64 `json:"reconfig_s"`
	Restarts  int     `json:"restarts"`
	// OnlineRestarts counts the restarts of online jobs (each loses the
	// requests its service held).
	OnlineRestarts int `json:"online_restarts"`
	// OnlineSlowdown is the mean of online jobs' JCT / alone time.
	OnlineSlowdown float64 `json:"online_slowdown"`
	// WaitS is the mean time from a job's arrival to its first start.
	WaitS float64 `json:"wait_s"`
	// Requests are the online jobs' requests: SLOAttainment the share
	// served within target, P99 the 99th percentile of latency over
	// target (+Inf where lost requests reach it; -1 in JSON).
	Requests      RequestStats `json:"-"`
	SLOAttainment float64      `json:"slo_attainment"`
	P99           float64      `json:"-"`
	P99JSON       float64      `json:"p99_over_target"`
	// Services counts the online jobs that got requests, ServicesMet
	// those whose objective held over their life (at least its
	// percentile of their requests within the bound).
	Services    int `json:"services"`
	ServicesMet int `json:"services_met"`
	// ByTarget is the services' outcomes per objective: its text form
	// ("p99=1.5x"), or DefaultTarget.
	ByTarget map[string]*TargetStats `json:"by_target,omitempty"`
	// PerService is each service's outcome, in arrival order.
	PerService []ServiceResult `json:"-"`
	// PredictionError is the median relative error of the estimator's
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
	alone         float64 // JCT alone: start-up + work (offline) or lifetime
	startup       float64
	save, restore float64
	remaining     float64  // offline: seconds of work alone
	svc           *service // online: its requests
	minSpeed      float64  // online, under the slo option: its need
	shared        bool     // an offline job runs in its instance
	speed         float64
	paused        float64 // no progress before this time
	gpu           int     // -1 while waiting
	ran           bool    // has run, so a start restores a checkpoint
	started       float64 // when it was first placed
	finish        float64
	done          bool
}

type jobSim struct {
	cfg     Config
	pol     Policy
	jobs    []*simJob
	byID    map[string]*simJob
	pending []*simJob
	now     float64
	res     Result
	// Partitioned policies: each GPU's plan. Shared ones: jobs per GPU.
	plans  []partitioner.GPUPlan
	shared [][]*simJob
	est    *partitioner.Cache
	effect map[[2]string]KernelEffect
	// The published baselines' state.
	miger *migerState
	miso  *misoState
	// predErr holds |predicted - true| / true per job and decision.
	predErr []float64
	// jobTime sums running jobs × seconds; layoutTime seconds per layout.
	jobTime    float64
	layoutTime map[string]float64
}

// Simulate runs one policy on a job trace.
func Simulate(cfg Config) (*Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	// A copy: a pointer into s would keep the whole simulation (its jobs,
	// requests and the predictor's answers) alive with the result.
	r := s.res
	return &r, nil
}

// newSim checks a configuration and sets up its simulation.
func newSim(cfg Config) (*jobSim, error) {
	if cfg.GPUs <= 0 {
		return nil, fmt.Errorf("job sim: gpus %d: want at least 1", cfg.GPUs)
	}
	if cfg.Model == nil || cfg.Truth == nil {
		return nil, errors.New("job sim: need a GPU model and a ground truth")
	}
	if cfg.MaxShare == 0 {
		cfg.MaxShare = DefaultMaxShare
	}
	if cfg.Costs.MIGReconfig == 0 {
		cfg.Costs.MIGReconfig = DefaultMIGReconfig
	}
	if cfg.Costs.MIGReconfig < 0 {
		return nil, fmt.Errorf("job sim: MIG change time %v: want >= 0", cfg.Costs.MIGReconfig)
	}
	if cfg.SLOFactor == 0 {
		cfg.SLOFactor = DefaultSLOFactor
	}
	if !(cfg.SLOFactor > 0) || math.IsInf(cfg.SLOFactor, 0) {
		return nil, fmt.Errorf("job sim: SLO factor %v: want a number > 0", cfg.SLOFactor)
	}
	if cfg.SLOMaxWait == 0 {
		cfg.SLOMaxWait = DefaultSLOMaxWait
	}
	if cfg.SLOHeadroom == 0 {
		cfg.SLOHeadroom = DefaultSLOHeadroom
	}
	if !(cfg.SLOHeadroom >= 1) || math.IsInf(cfg.SLOHeadroom, 0) {
		return nil, fmt.Errorf("job sim: SLO headroom %v: want a number >= 1", cfg.SLOHeadroom)
	}
	if !(cfg.OracleError >= 0) || math.IsInf(cfg.OracleError, 0) {
		return nil, fmt.Errorf("job sim: oracle error %v: want a number >= 0", cfg.OracleError)
	}
	pol, err := ParsePolicy(cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("job sim: %w", err)
	}
	s := &jobSim{cfg: cfg, pol: pol, byID: map[string]*simJob{}, res: Result{Policy: cfg.Policy}, effect: map[[2]string]KernelEffect{}}
	switch pol.kind {
	case kindDefault, kindMPS:
		s.shared = make([][]*simJob, cfg.GPUs)
	default:
		if cfg.Est == nil {
			return nil, fmt.Errorf("job sim: policy %s needs an estimator", cfg.Policy)
		}
		s.est = partitioner.NewCache(withPriority(cfg.Est, pol.priority()))
		// Algorithm 1 without MIG changes runs its GPUs with MIG mode
		// off, as mmkd does without mig.manage: the whole GPU's SMs.
		gm := cfg.Model
		if pol.Has(OptFixedMIG) {
			gm = gm.MIGDisabled()
		}
		full := baselines.BaseProfiles(gm)
		whole, err := partitioner.ParseLayout(gm, full[len(full)-1].Name)
		if err != nil {
			return nil, fmt.Errorf("job sim: whole-GPU layout: %w", err)
		}
		s.plans = make([]partitioner.GPUPlan, cfg.GPUs)
		for g := range s.plans {
			s.plans[g].Layout = whole
		}
	}
	switch pol.kind {
	case kindMIGER:
		s.miger = newMIGERState(s)
	case kindMISO:
		s.miso = newMISOState(s)
	}
	if pol.Has(OptKernel) {
		for _, e := range cfg.Effects {
			s.effect[[2]string{e.Online, e.Offline}] = e
		}
	}
	for _, j := range cfg.Jobs {
		jt, ok := trace.LookupJobType(j.Type)
		if !ok || !cfg.Truth.Has(j.Type) {
			return nil, fmt.Errorf("job sim: job %s: unknown job type %q", j.ID, j.Type)
		}
		if j.Online != jt.Online {
			return nil, fmt.Errorf("job sim: job %s: online %v, but its type %s is online %v", j.ID, j.Online, j.Type, jt.Online)
		}
		if _, dup := s.byID[j.ID]; dup {
			return nil, fmt.Errorf("job sim: job id %q is given twice", j.ID)
		}
		if j.Work <= 0 {
			return nil, fmt.Errorf("job sim: job %s: work %v: want > 0", j.ID, j.Work)
		}
		if j.Arrival < 0 {
			return nil, fmt.Errorf("job sim: job %s: arrival %v: want >= 0", j.ID, j.Arrival)
		}
		c := cfg.Costs.Checkpoint[j.Type]
		sj := &simJob{SimJob: j, startup: jt.Startup.Seconds(), save: c.SaveS, restore: c.RestoreS, gpu: -1}
		if j.Online {
			if !(j.Load > 0 && j.Load <= 1) {
				return nil, fmt.Errorf("job sim: online job %s: load %v: want in (0, 1]", j.ID, j.Load)
			}
			l := cfg.Truth.LatencyMs(j.Type) / 1000
			if l <= 0 {
				return nil, fmt.Errorf("job sim: online job %s: type %s has no measured latency", j.ID, j.Type)
			}
			sj.svc = &service{load: j.Load, life: j.Work.Seconds(), start: math.Inf(1), end: math.Inf(1), latency: l}
			t := j.SLO
			if t.IsZero() {
				// The default: an absolute p99 bound, SLOFactor times the
				// latency of one request alone.
				t = slo.Target{Percentile: 99, Bound: time.Duration(cfg.SLOFactor * l * float64(time.Second))}
			}
			if t.Percentile <= 0 || t.Percentile >= 100 || t.Ratio < 0 || t.Bound < 0 || (t.Ratio == 0) == (t.Bound == 0) {
				return nil, fmt.Errorf("job sim: online job %s: latency target %q: want a percentile and one bound", j.ID, t)
			}
			sj.svc.class = cmp.Or(j.SLO.String(), DefaultTarget)
			if err := sj.svc.resolve(t, j.ID, cfg.Seed); err != nil {
				return nil, fmt.Errorf("job sim: %w", err)
			}
			sj.alone = sj.startup + j.Work.Seconds()
		} else {
			sj.remaining = j.Work.Seconds()
			sj.alone = sj.remaining + sj.startup
		}
		s.jobs = append(s.jobs, sj)
		s.byID[j.ID] = sj
	}
	slices.SortStableFunc(s.jobs, func(a, b *simJob) int { return cmp.Compare(a.Arrival, b.Arrival) })
	if pol.Has(OptOracle) {
		s.est = partitioner.NewCache(newOracle(s, cfg.OracleError))
	}
	if pol.Has(OptSLO) {
		if err := s.needs(); err != nil {
			return nil, err
		}
	}
	return s, nil
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

// up reports whether a placed job is past its start.
func (s *jobSim) up(j *simJob) bool { return j.gpu >= 0 && j.paused <= s.now }

// nextEvent is the next time something changes: an arrival, a start
// completing, an offline job finishing, a service's requests ending or
// its queue emptying, or a baseline's timer.
func (s *jobSim) nextEvent(next int) float64 {
	t := math.Inf(1)
	if next < len(s.jobs) {
		t = s.jobs[next].Arrival.Seconds()
	}
	for _, j := range s.jobs {
		if j.done || j.Arrival.Seconds() > s.now {
			continue
		}
		if j.gpu >= 0 && j.paused > s.now {
			t = min(t, j.paused)
			continue
		}
		if j.svc == nil {
			if j.gpu >= 0 && j.speed > 0 {
				t = min(t, s.now+j.remaining/j.speed)
			}
			continue
		}
		v := j.svc
		if s.now < v.end {
			t = min(t, v.end)
		}
		if j.gpu < 0 {
			continue
		}
		if net := j.speed - v.inRate(s.now); v.backlog > backlogTol*v.latency && net > 0 {
			t = min(t, s.now+v.backlog/net)
		}
	}
	// A waiting service with a need is placed anew when its wait ends.
	if s.cfg.SLOMaxWait > 0 {
		for _, j := range s.pending {
			if j.minSpeed > 0 {
				if at := j.Arrival.Seconds() + s.cfg.SLOMaxWait.Seconds(); at > s.now {
					t = min(t, at)
				}
			}
		}
	}
	// MIGER retries its queue's head only while something can change:
	// a job runs or is yet to arrive.
	if s.miger != nil && (next < len(s.jobs) || len(s.running()) > 0) {
		t = min(t, s.miger.nextRetry(s.now))
	}
	if s.miso != nil {
		t = min(t, s.miso.nextPhaseEnd())
	}
	return t
}

// advance moves every job's progress to time t.
func (s *jobSim) advance(t float64) {
	dt := t - s.now
	n := 0
	for _, j := range s.jobs {
		if j.done || j.Arrival.Seconds() > s.now {
			continue
		}
		if j.gpu >= 0 {
			n++
		}
		if j.svc != nil {
			v := j.svc
			out := 0.0
			if s.up(j) {
				out = j.speed
			}
			in := v.inRate(s.now)
			if v.backlog > 0 || in > out {
				v.backlog = max(0, v.backlog+(in-out)*dt)
			}
			if v.backlog <= backlogTol*v.latency {
				v.backlog = 0
			}
			continue
		}
		if s.up(j) {
			j.remaining -= j.speed * dt
		}
	}
	s.account(dt, n)
	s.now = t
	for _, j := range s.jobs {
		if j.svc != nil && !j.done && s.up(j) {
			j.svc.up(j.paused)
		}
	}
}

// backlogTol is the fluid backlog, in requests, taken for none.
const backlogTol = 1e-6

// finished reports whether a job is done at now.
func (s *jobSim) finished(j *simJob) bool {
	if j.svc != nil {
		return j.gpu >= 0 && s.now >= j.svc.end-1e-9 && j.svc.backlog == 0
	}
	return s.up(j) && j.remaining <= 1e-9*j.alone
}

func (s *jobSim) run() error {
	next, finished, reported := 0, 0, -1
	for finished < len(s.jobs) {
		t := s.nextEvent(next)
		if math.IsInf(t, 1) {
			s.res.Unfinished = len(s.jobs) - finished
			break // what waits can never be placed
		}
		s.advance(t)
		changed := false
		for _, j := range s.running() {
			if s.finished(j) {
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
		if s.miger != nil && s.miger.due(s.now) {
			changed = true
		}
		for _, j := range s.pending {
			if j.minSpeed > 0 && s.cfg.SLOMaxWait > 0 && math.Abs(s.now-j.Arrival.Seconds()-s.cfg.SLOMaxWait.Seconds()) < 1e-9 {
				changed = true // its wait just ended
			}
		}
		if s.miso != nil && s.miso.phaseDue(s.now) {
			changed = true
		}
		if changed {
			if err := s.decide(); err != nil {
				return fmt.Errorf("job sim %s at %.0f s: %w", s.cfg.Policy, s.now, err)
			}
		}
		// Rates change at decisions and when starts complete.
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
	if s.pol.Has(OptFixedMIG) {
		return // MIG mode off: no layout
	}
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

func (s *jobSim) decide() error {
	switch {
	case s.shared != nil:
		s.decideShared()
		return nil
	case s.miger != nil:
		return s.miger.decide()
	case s.miso != nil:
		return s.miso.decide()
	}
	return s.decideAlg1()
}

// partJob is a job as the partitioner sees it.
func partJob(j *simJob) partitioner.Job {
	pj := partitioner.Job{ID: j.ID, Type: j.Type, Online: j.Online, MemoryMiB: j.MemoryMiB, MinSpeed: j.minSpeed}
	if j.svc != nil {
		pj.Load = j.svc.load
	}
	return pj
}

// DefaultSLOMaxWait is Config.SLOMaxWait when unset: a service waits at
// most a minute for a place that holds its target, as mmkd's default
// (placement.slo_max_wait). On the map's most loaded cells (load 1.5,
// p99=1.25x) waiting as long as it takes held more services (testbed: 49
// points over mps-prio) at 1.40-1.46x mps-prio's mean JCT; a minute holds
// fewer (19 points) at 1.04-1.09x (docs/results/partition.md).
const DefaultSLOMaxWait = time.Minute

// waitedOut reports whether a waiting service with a need has waited
// Config.SLOMaxWait: it is placed as if it had none.
func (s *jobSim) waitedOut(j *simJob) bool {
	return j.minSpeed > 0 && s.cfg.SLOMaxWait > 0 && s.now-j.Arrival.Seconds() >= s.cfg.SLOMaxWait.Seconds()-1e-9
}

// DefaultSLOHeadroom is the slowdown an online job's need allows for
// beside offline jobs at MPS client priority 1, which priority does not
// remove (memory bandwidth) and the slo option's guard does not count:
// mmkd's (slo.PlacementHeadroom).
const DefaultSLOHeadroom = slo.PlacementHeadroom

// needs sets each online job's MinSpeed for the slo option: the least
// speed at which it meets its target with Config.SLOHeadroom to spare
// (minSpeed), at most what the estimator gives it alone on the largest
// instance at its demand and at 100 % (so that it can always be placed).
func (s *jobSim) needs() error {
	m := s.plans[0].Layout.Model
	full := m.Profiles[len(m.Profiles)-1]
	for _, j := range s.jobs {
		if j.svc == nil {
			continue
		}
		var err error
		at := func(p int) float64 {
			v, e := s.est.Speed(partJob(j), full.SMs, m.SMs, p, nil)
			err = cmp.Or(err, e)
			return v
		}
		// The guard checks the job at the percentage MPSConfig gives it:
		// its demand, or 100 % under priority shares. A predictor's
		// speeds need not rise with the share, so the need is capped by
		// both, or an online job could fit nowhere, not even alone.
		top := min(at(partitioner.Demand(at)), at(100))
		if err != nil {
			return fmt.Errorf("job sim: %w", err)
		}
		j.minSpeed = min(minSpeed(j.svc.load, j.svc.latency, j.svc.target/s.cfg.SLOHeadroom, j.svc.q), 0.999*top)
	}
	return nil
}

// decideAlg1 runs Algorithm 1 (with the restart gate where the policy
// has it) and carries out its plan.
func (s *jobSim) decideAlg1() error {
	req := partitioner.Request{GPUs: s.plans}
	for _, j := range s.pending {
		pj := partJob(j)
		if s.waitedOut(j) {
			pj.MinSpeed = 0
		}
		req.Pending = append(req.Pending, pj)
	}
	opt := s.pol.options(s.cfg.MaxShare)
	var plan *partitioner.Plan
	var err error
	if s.pol.Has(OptGate) {
		plan, _, err = partitioner.DecideGated(req, s.est, opt, s.gateCost)
	} else {
		plan, err = partitioner.Decide(req, s.est, opt)
	}
	if err != nil {
		return err
	}
	if s.cfg.OnPlan != nil {
		s.cfg.OnPlan(plan)
	}
	for _, ch := range plan.Changes {
		s.apply(plan.GPUs[ch.GPU], ch)
	}
	s.plans = plan.GPUs
	waiting := map[string]bool{}
	for _, j := range plan.Waiting {
		waiting[j.ID] = true
	}
	s.pending = slices.DeleteFunc(s.pending, func(j *simJob) bool { return !waiting[j.ID] })
	return nil
}

// gateCost is what mmkd tells the restart gate: a restart loses the
// job's save, start-up and restore; the gain counts over the job's run so
// far (node/restartcost.go).
func (s *jobSim) gateCost(id string) (partitioner.RestartCost, bool) {
	j, ok := s.byID[id]
	if !ok {
		return partitioner.RestartCost{}, false
	}
	return partitioner.RestartCost{Lost: s.restartDelay(j), Horizon: s.now - j.Arrival.Seconds()}, true
}

// restartDelay is how long a restart stops a running job, MIG aside: an
// offline job saves its checkpoint, starts and restores it; a service
// starts and loads its model (its checkpoint's restore).
func (s *jobSim) restartDelay(j *simJob) float64 {
	d := j.startup + j.restore
	if j.svc == nil && s.up(j) {
		d += j.save
	}
	return d
}

// apply carries out one GPU's change to its plan next: the MIG change
// (its instances stop for the change), restarts and starts.
func (s *jobSim) apply(next partitioner.GPUPlan, ch partitioner.GPUChange) {
	mig := ch.MIG
	kept := map[string]bool{}
	migS := 0.0
	if mig != nil {
		s.res.Reconfigs++
		migS = s.cfg.Costs.MIGReconfig.Seconds()
		s.res.ReconfigS += migS
		for _, gi := range mig.Kept {
			kept[gi.String()] = true
		}
	}
	inst := map[string]string{}
	for _, p := range next.Jobs {
		inst[p.Job.ID] = next.Layout.Instances[p.Instance].String()
	}
	extra := func(j *simJob) float64 {
		if mig != nil && !kept[inst[j.ID]] {
			return migS
		}
		return 0
	}
	for _, id := range ch.Restart {
		j := s.byID[id]
		s.restart(j, extra(j))
	}
	for _, id := range ch.Start {
		j := s.byID[id]
		d := j.startup + extra(j)
		if j.ran {
			d += j.restore
		} else {
			j.started = s.now
		}
		j.gpu, j.paused, j.ran = ch.GPU, s.now+d, true
	}
}

// restart stops a running job and starts it again after its restart
// delay and extra seconds (a MIG change).
func (s *jobSim) restart(j *simJob, extra float64) {
	d := s.restartDelay(j) + extra
	if j.svc != nil {
		j.svc.stop(s.now)
		s.res.OnlineRestarts++
	}
	j.paused = s.now + d
	s.res.Restarts++
}
