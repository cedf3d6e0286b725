package partitioner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Job is what the hybrid partition algorithm knows of a job.
type Job struct {
	// ID names the job uniquely.
	ID string `json:"id"`
	// Type is the workload type the estimator knows the job by, e.g.
	// "resnet50_train".
	Type string `json:"type"`
	// Online marks latency-critical jobs: their MPS share is kept while
	// they run and, under MMK's rule, MIG is not changed under them.
	Online bool `json:"online"`
	// MemoryMiB is the job's device memory, CUDA context included.
	MemoryMiB int64 `json:"memoryMiB"`
	// MinSpeed is, for an online job under Options.SLOGuard, the least
	// speed (relative to alone on the whole GPU) at which it meets its
	// latency target; 0: none.
	MinSpeed float64 `json:"minSpeed,omitempty"`
	// Load is, for an online job, the share of time its requests keep it
	// busy alone on the whole GPU; the SLO guard counts it as a
	// co-runner at its share times its load. 0: unknown, always busy.
	Load float64 `json:"load,omitempty"`
	// Pin, when set, is the one instance the job may run in: a
	// Kubernetes claim whose device the cluster's scheduler allocated
	// (see Pin).
	Pin *Pin `json:"pin,omitempty"`
	// Avoid are GPUs (indexes of Request.GPUs) the job must not be placed
	// on: a job moved off a GPU whose services missed their targets
	// (Relieve) is not placed back there.
	Avoid []int `json:"avoid,omitempty"`
}

// Pin holds a job to one instance that someone else chose. A pinned job
// is placed there or waits, keeps its percentage once placed (it is never
// restarted: mmk does not run its process), and the layout of its GPU is
// never searched while it runs or waits there.
type Pin struct {
	// GPU indexes Request.GPUs; Instance that GPU's Layout.Instances.
	GPU      int `json:"gpu"`
	Instance int `json:"instance"`
}

// Share is a job at an MPS active-thread percentage: a co-runner.
type Share struct {
	Job     Job
	Percent int
}

// Estimator is MMK's stp: a job's speed in a GPU instance of sms SMs (on a
// GPU of gpuSMs SMs) at an MPS percentage, next to co-runners in the same
// instance. Speed is relative to the job alone on the whole GPU at 100 %:
// throughput ratio for offline jobs, inverse latency ratio for online jobs,
// so that speeds of different jobs add up to a system throughput.
type Estimator interface {
	Speed(job Job, sms, gpuSMs, percent int, co []Share) (float64, error)
}

// LoadAware is an Estimator that counts an online co-runner's busy share
// itself; the SLO guard gives it co-runners at their share, not scaled
// by their Load. Its answers must still depend on a co-runner's type and
// percent only (what Cache keys them by), so it may count a type's
// typical load, not each job's own.
type LoadAware interface {
	KnowsLoad() bool
}

// Placed is a job in a GPU instance at an MPS percentage.
type Placed struct {
	Job Job `json:"job"`
	// Instance indexes the GPU's Layout.Instances.
	Instance int `json:"instance"`
	// Percent is the job's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 10..100.
	Percent int `json:"percent"`
	// Speed is the estimator's speed for the job where it is placed.
	Speed float64 `json:"speed"`
}

// GPUPlan is one GPU's layout and the jobs in its instances. A GPU with
// MIG disabled is a layout of one instance of the whole-GPU profile.
type GPUPlan struct {
	Layout Layout   `json:"layout"`
	Jobs   []Placed `json:"jobs"`
}

// Total is the sum of the GPU's predicted job speeds.
func (g GPUPlan) Total() float64 {
	t := 0.0
	for _, p := range g.Jobs {
		t += p.Speed
	}
	return t
}

// Request is the input of one decision: what runs where now, and the jobs
// waiting to be placed (new arrivals and earlier ones that did not fit), in
// arrival order. Finished jobs are already gone from GPUs.
type Request struct {
	GPUs    []GPUPlan
	Pending []Job
}

// Options tune a decision. The zero value is MMK's rule with defaults.
type Options struct {
	// Profiles restricts the layout search (nil: the model's defaults).
	Profiles []string
	// MinGain is the relative rise in a GPU's total predicted speed that
	// a MIG or MPS change of running jobs must bring, since it restarts
	// them (default 0.05).
	MinGain float64
	// FixedMIG never changes a GPU's layout (mig.manage off).
	FixedMIG bool
	// MIGUnderOnline allows MIG changes on a GPU where an online job runs
	// (MIGER-like); MMK never does this.
	MIGUnderOnline bool
	// FixOnlinePercent keeps running online jobs' percentages (MMK's QoS
	// rule); without it every running job may be re-shared.
	FixOnlinePercent bool
	// MaxJobsPerInstance caps the jobs an instance holds (0: no cap; 1:
	// MIG only, MISO-like).
	MaxJobsPerInstance int
	// Spread places each job in the least busy instance (each job
	// counting 1, an online job of known Load its Load; under
	// PriorityShares an online job does not count the offline jobs below
	// it), the predicted gain breaking ties.
	Spread bool
	// ArrivalOrder places pending jobs first come, first served instead
	// of largest memory first.
	ArrivalOrder bool
	// PriorityShares is MPSConfig where MPS client priority protects the
	// online jobs (offline clients run below normal priority): every new
	// job gets 100 % and an instance's shares may sum above 100 %, so that
	// only memory limits who shares it. A running job keeps its
	// percentage, so that no arrival or completion restarts it. Measured
	// on an H100: priority alone kept an online job near its alone latency
	// next to a trainer at 100 % (docs/results/pareto-h100.md), and
	// offline jobs held to their predicted demand lost throughput next to
	// others (densenet201 at 20 %: 6.8 it/s against 7.5 at 100 %,
	// docs/results/mmkd-e2e-h100.md).
	PriorityShares bool
	// KeepRunning keeps every running job in its instance at its
	// percentage and the layouts as they are: the plan restarts nothing
	// and places pending jobs in what is left (DecideGated's alternative).
	KeepRunning bool
	// FullDemand is MPSConfig as MMK's Algorithm 1 writes it (lines
	// 28-32): a job gets its whole demand or does not go into the
	// instance. Without it a job takes what is left of the instance down
	// to one step, and an online job admitted so keeps that sliver for
	// life under FixOnlinePercent.
	FullDemand bool
	// OnlineReclaim lets a running online job whose kept percentage is
	// below its demand take its demand back when MPSConfig runs again
	// (a restart of the job, so only where it raises the instance's
	// predicted total by MinGain).
	OnlineReclaim bool
	// MIGKeepOnline allows MIG changes on a GPU where online jobs run, as
	// long as the new layout keeps each online job's instance (profile and
	// placement) and its percentage: no online job restarts. MMK's line
	// 12 freezes the layout under any online job.
	MIGKeepOnline bool
	// OnlineFirst places pending online jobs before offline ones (each
	// group largest memory first, or in arrival order with ArrivalOrder).
	OnlineFirst bool
	// SLOGuard places a job in an instance only where every online job
	// with a MinSpeed there keeps a predicted speed that reaches it, next
	// to its co-runners (MIGER's rule of the smallest slice meeting the
	// target, applied to Algorithm 1's instances and to what shares
	// them). Online co-runners count at their share times their Load
	// (a service between requests takes no SMs); under PriorityShares
	// offline co-runners do not count: MPS client priority keeps them off
	// the online jobs' SMs, and the caller's MinSpeed carries the headroom
	// for the memory interference that priority leaves.
	SLOGuard bool
}

// DefaultMinGain is Options.MinGain when unset.
const DefaultMinGain = 0.05

// GPUChange is how one GPU moves to its planned state.
type GPUChange struct {
	GPU int `json:"gpu"`
	// MIG is the reconfiguration of the GPU's instances; nil when the
	// layout stays.
	MIG *Reconfiguration `json:"mig,omitempty"`
	// Restart lists the running jobs that must stop and start again:
	// their instance is destroyed or changes, or their MPS percentage
	// changes (MPS fixes a client's percentage when its context starts).
	Restart []string `json:"restart,omitempty"`
	// Start lists the pending jobs this plan places.
	Start []string `json:"start,omitempty"`
}

// Plan is a decision: every GPU's target state, the jobs left waiting, and
// the changes that lead there.
type Plan struct {
	GPUs    []GPUPlan   `json:"gpus"`
	Waiting []Job       `json:"waiting,omitempty"`
	Changes []GPUChange `json:"changes,omitempty"`
	// Total is the predicted system throughput: the sum of job speeds.
	Total float64 `json:"total"`
}

// Decide runs MMK's Algorithm 1 once. See the package documentation for
// the algorithm and the choices made where the paper is silent.
func Decide(req Request, est Estimator, opt Options) (*Plan, error) {
	if opt.MinGain == 0 {
		opt.MinGain = DefaultMinGain
	}
	if opt.KeepRunning {
		opt.FixedMIG = true
	}
	d := &decider{est: NewCache(est), opt: opt}
	gpus, err := workingCopy(req)
	if err != nil {
		return nil, err
	}
	pending := d.placeOrder(req.Pending)
	nrun := 0
	for _, g := range req.GPUs {
		nrun += len(g.Jobs)
	}
	seen := make(map[string]bool, nrun+len(pending))
	for _, g := range req.GPUs {
		for _, p := range g.Jobs {
			seen[p.Job.ID] = true
		}
	}
	for _, j := range pending {
		if seen[j.ID] {
			return nil, fmt.Errorf("job id %q is given twice", j.ID)
		}
		seen[j.ID] = true
	}

	// 1. MPS: re-share instances whose jobs changed (a finish frees share),
	//    then place each pending job greedily where it adds most.
	for g := range gpus {
		for i := range gpus[g].Layout.Instances {
			if err := d.reshare(&gpus[g], i); err != nil {
				return nil, err
			}
		}
	}
	waiting, err := d.placeAll(gpus, pending)
	if err != nil {
		return nil, err
	}

	// 2. MIG: on each GPU where no online job runs and none is pinned,
	//    search every layout (Algorithm 1, line 12; pinned jobs wait for
	//    their own instance); with MIGKeepOnline, every layout that keeps
	//    the online jobs' instances.
	if !opt.FixedMIG {
		for g := range gpus {
			if pinnedTo(req, g) {
				continue
			}
			keep := !opt.MIGUnderOnline && runsOnline(req.GPUs[g])
			if keep && !opt.MIGKeepOnline {
				continue
			}
			var err error
			waiting, err = d.searchLayout(&gpus[g], g, waiting, keep)
			if err != nil {
				return nil, fmt.Errorf("gpu %d: %w", g, err)
			}
		}
	}

	arrival := make(map[string]int, len(req.Pending))
	for k, j := range req.Pending {
		arrival[j.ID] = k
	}
	slices.SortFunc(waiting, func(a, b Job) int { return cmp.Compare(arrival[a.ID], arrival[b.ID]) })
	plan := &Plan{GPUs: gpus, Waiting: waiting}
	for g := range gpus {
		plan.Total += gpus[g].Total()
		ch, err := Change(g, req.GPUs[g], gpus[g])
		if err != nil {
			return nil, err
		}
		if ch.MIG != nil || len(ch.Restart) > 0 || len(ch.Start) > 0 {
			plan.Changes = append(plan.Changes, ch)
		}
	}
	return plan, nil
}

// workingCopy is the request's GPUs as a plan to change, each checked:
// a layout with a model, every job in one of its instances.
func workingCopy(req Request) ([]GPUPlan, error) {
	gpus := make([]GPUPlan, len(req.GPUs))
	for g, cur := range req.GPUs {
		if cur.Layout.Model == nil {
			return nil, fmt.Errorf("gpu %d: layout has no model", g)
		}
		for _, p := range cur.Jobs {
			if p.Instance < 0 || p.Instance >= len(cur.Layout.Instances) {
				return nil, fmt.Errorf("gpu %d: job %s is in instance %d, the layout %s has %d", g, p.Job.ID, p.Instance, cur.Layout, len(cur.Layout.Instances))
			}
		}
		gpus[g] = GPUPlan{Layout: cur.Layout, Jobs: slices.Clone(cur.Jobs)}
	}
	return gpus, nil
}

// byMemory sorts jobs by memory, largest first, keeping arrival order
// among equals (Algorithm 1, line 1).
func byMemory(jobs []Job) []Job {
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b Job) int { return cmp.Compare(b.MemoryMiB, a.MemoryMiB) })
	return out
}

// pinnedTo reports a GPU that holds a pinned job or that a pending job is
// pinned to: its layout stays.
func pinnedTo(req Request, g int) bool {
	return slices.ContainsFunc(req.GPUs[g].Jobs, func(p Placed) bool { return p.Job.Pin != nil }) ||
		slices.ContainsFunc(req.Pending, func(j Job) bool { return j.Pin != nil && j.Pin.GPU == g })
}

// placeOrder is the order jobs are placed in: largest memory first (or
// arrival order with ArrivalOrder), online jobs before offline ones with
// OnlineFirst.
func (d *decider) placeOrder(jobs []Job) []Job {
	if !d.opt.ArrivalOrder {
		jobs = byMemory(jobs)
	}
	if d.opt.OnlineFirst {
		jobs = slices.Clone(jobs)
		slices.SortStableFunc(jobs, func(a, b Job) int {
			switch {
			case a.Online == b.Online:
				return 0
			case a.Online:
				return -1
			}
			return 1
		})
	}
	return jobs
}

func runsOnline(g GPUPlan) bool {
	return slices.ContainsFunc(g.Jobs, func(p Placed) bool { return p.Job.Online })
}

// decider holds one decision's estimator cache and options.
type decider struct {
	est *Cache
	opt Options
	// Scratch space reused across MPSConfig calls.
	cur   []Placed
	jobs  []Job
	wants []want
	order []*want
	co    []Share
}

// inInstance returns the jobs of instance i.
func inInstance(g *GPUPlan, i int) []Placed {
	return appendInstance(nil, g, i)
}

// appendInstance appends the jobs of instance i to out.
func appendInstance(out []Placed, g *GPUPlan, i int) []Placed {
	for _, p := range g.Jobs {
		if p.Instance == i {
			out = append(out, p)
		}
	}
	return out
}

// busyIn is how busy instance i's jobs keep it for job j: an offline
// job or an online one of unknown load counts 1, an online job its Load;
// under PriorityShares an online j does not count offline jobs, which
// run below it.
func (d *decider) busyIn(ps []Placed, i int, j Job) float64 {
	n := 0.0
	for _, p := range ps {
		if p.Instance == i && !(d.opt.PriorityShares && j.Online && !p.Job.Online) {
			n += p.Job.busy()
		}
	}
	return n
}

// busy is the share of time the job keeps its instance busy: its Load
// if online and known, else 1.
func (j Job) busy() float64 {
	if j.Online && j.Load > 0 {
		return min(1, j.Load)
	}
	return 1
}

// jobsIn counts the jobs placed in instance i.
func jobsIn(ps []Placed, i int) int {
	n := 0
	for _, p := range ps {
		if p.Instance == i {
			n++
		}
	}
	return n
}

// replaceInstance sets instance i's jobs.
func replaceInstance(g *GPUPlan, i int, jobs []Placed) {
	g.Jobs = slices.DeleteFunc(g.Jobs, func(p Placed) bool { return p.Instance == i })
	g.Jobs = append(g.Jobs, jobs...)
	slices.SortStableFunc(g.Jobs, func(a, b Placed) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), strings.Compare(a.Job.ID, b.Job.ID))
	})
}

func instanceTotal(jobs []Placed) float64 {
	t := 0.0
	for _, p := range jobs {
		t += p.Speed
	}
	return t
}

func memoryUsed(jobs []Placed) int64 {
	var m int64
	for _, p := range jobs {
		m += p.Job.MemoryMiB
	}
	return m
}

// reshare runs MPSConfig on instance i of g and applies it when it raises
// the instance's predicted total by MinGain (it restarts offline jobs).
func (d *decider) reshare(g *GPUPlan, i int) error {
	cur := inInstance(g, i)
	if len(cur) == 0 {
		return nil
	}
	jobs := make([]Job, len(cur))
	for k, p := range cur {
		jobs[k] = p.Job
	}
	// Current speeds first: co-runners may have left since they were set.
	now, err := d.speeds(g.Layout, i, cur)
	if err != nil {
		return err
	}
	replaceInstance(g, i, now)
	if d.opt.KeepRunning {
		return nil
	}
	next, ok, err := d.mpsConfig(g.Layout, i, jobs, now)
	if err != nil || !ok {
		return err
	}
	if instanceTotal(next) > instanceTotal(now)*(1+d.opt.MinGain) {
		replaceInstance(g, i, next)
	}
	return nil
}

// placeBest puts job j into the instance of any GPU where it raises the
// predicted total most (Algorithm 1's greedy step). It reports false when
// no instance has the memory and an SM share left for it.
func (d *decider) placeBest(gpus []GPUPlan, j Job) (bool, error) {
	bestG, bestI, bestN, bestGain := -1, -1, 0.0, 0.0
	var best []Placed
	for g := range gpus {
		// Empty instances of one profile on a GPU are alike: try the first.
		var emptyTried []*Profile
		for i, in := range gpus[g].Layout.Instances {
			if j.Pin != nil && (j.Pin.GPU != g || j.Pin.Instance != i) || slices.Contains(j.Avoid, g) {
				continue
			}
			n := d.busyIn(gpus[g].Jobs, i, j)
			if jobsIn(gpus[g].Jobs, i) == 0 {
				if slices.Contains(emptyTried, in.Profile) {
					continue
				}
				emptyTried = append(emptyTried, in.Profile)
			}
			next, gain, ok, err := d.tryAdd(&gpus[g], i, j)
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
			// Under Spread the least busy instance wins, the gain
			// breaking ties; otherwise the gain alone decides.
			if !d.opt.Spread {
				n = 0
			}
			if bestG < 0 || n < bestN || (n == bestN && gain > bestGain) {
				bestG, bestI, bestN, bestGain, best = g, i, n, gain, next
			}
		}
	}
	if bestG < 0 {
		return false, nil
	}
	replaceInstance(&gpus[bestG], bestI, best)
	return true, nil
}

// placeAll places jobs in order with placeBest and returns those that
// found no place.
//
// A job like one that found no place since the last placement (same
// type, memory and kind; under the SLO guard, the same need and load)
// finds none either, and is not tried again.
func (d *decider) placeAll(gpus []GPUPlan, jobs []Job) ([]Job, error) {
	var left []Job
	type like struct {
		typ    string
		mem    int64
		online bool
		pin    Pin
		pinned bool
		// Under the SLO guard a job's own need and load decide too.
		need, load float64
	}
	var failed []like // since the last placement; few
	for _, j := range jobs {
		k := like{typ: j.Type, mem: j.MemoryMiB, online: j.Online, pinned: j.Pin != nil}
		if d.opt.SLOGuard {
			k.need, k.load = j.MinSpeed, j.Load
		}
		if j.Pin != nil {
			k.pin = *j.Pin
		}
		if len(j.Avoid) == 0 && slices.Contains(failed, k) {
			left = append(left, j)
			continue
		}
		ok, err := d.placeBest(gpus, j)
		if err != nil {
			return nil, err
		}
		if ok {
			failed = failed[:0]
		} else if len(j.Avoid) > 0 {
			// Its GPUs differ from those of a job like it.
			left = append(left, j)
		} else {
			failed = append(failed, k)
			left = append(left, j)
		}
	}
	return left, nil
}

// tryAdd is instance i of g with j added and re-shared, and the gain in
// predicted total; ok is false if j does not fit.
func (d *decider) tryAdd(g *GPUPlan, i int, j Job) ([]Placed, float64, bool, error) {
	in := g.Layout.Instances[i]
	cur := appendInstance(d.cur[:0], g, i)
	d.cur = cur
	if memoryUsed(cur)+j.MemoryMiB > in.Profile.MemoryMiB || (d.opt.MaxJobsPerInstance > 0 && len(cur) >= d.opt.MaxJobsPerInstance) {
		return nil, 0, false, nil
	}
	jobs := d.jobs[:0]
	for _, p := range cur {
		jobs = append(jobs, p.Job)
	}
	jobs = append(jobs, j)
	d.jobs = jobs
	next, ok, err := d.mpsConfig(g.Layout, i, jobs, cur)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if d.opt.SLOGuard {
		met, err := d.needsMet(g.Layout, i, next, cur, j.ID)
		if err != nil || !met {
			return nil, 0, false, err
		}
	}
	return next, instanceTotal(next) - instanceTotal(cur), true, nil
}

// needsMet reports whether adding job added to instance i of l (cur
// before, placed after) keeps the online jobs' needs
// (Options.SLOGuard): the added job, if online with a MinSpeed, must
// reach it next to the others; a job already there may not be brought
// below its need by the addition (one already below it, say a need that
// rose once its latency alone was measured, closes the instance only to
// jobs that slow it further).
func (d *decider) needsMet(l Layout, i int, placed, cur []Placed, added string) (bool, error) {
	for _, p := range placed {
		if !p.Job.Online || p.Job.MinSpeed <= 0 {
			continue
		}
		v, err := d.guardSpeed(l, i, p, placed)
		if err != nil {
			return false, err
		}
		if v >= p.Job.MinSpeed {
			continue
		}
		if p.Job.ID == added {
			return false, nil
		}
		k := slices.IndexFunc(cur, func(c Placed) bool { return c.Job.ID == p.Job.ID })
		if k < 0 {
			return false, nil
		}
		was, err := d.guardSpeed(l, i, cur[k], cur)
		if err != nil {
			return false, err
		}
		if v < was*(1-1e-9) {
			return false, nil
		}
	}
	return true, nil
}

// guardSpeed is the predicted speed of p (instance i of l) next to the
// other jobs of placed as the SLO guard counts them: online co-runners at
// their share times their Load (unless the estimator counts load
// itself), offline ones not at all under PriorityShares.
func (d *decider) guardSpeed(l Layout, i int, p Placed, placed []Placed) (float64, error) {
	var co []Share
	for _, o := range placed {
		if o.Job.ID == p.Job.ID || (d.opt.PriorityShares && !o.Job.Online) {
			continue
		}
		pct := o.Percent
		if o.Job.Online && o.Job.Load > 0 && !d.est.KnowsLoad() {
			pct = max(1, int(math.Round(float64(pct)*min(1, o.Job.Load))))
		}
		co = append(co, Share{Job: o.Job, Percent: pct})
	}
	return d.est.speed(p.Job, l.Instances[i].Profile.SMs, l.Model.SMs, p.Percent, co)
}

// Change compares GPU g's current and planned states: the MIG change
// when the layouts differ, the jobs new to the GPU (Start) and the
// running jobs whose instance or MPS percentage changes (Restart), both
// in next's order. A running job of cur with no place in next is an
// error.
func Change(g int, cur, next GPUPlan) (GPUChange, error) {
	ch := GPUChange{GPU: g}
	if !cur.Layout.Equal(next.Layout) {
		r, err := PlanReconfiguration(cur.Layout.Model, InstancesOf(cur.Layout), next.Layout)
		if err != nil {
			return ch, fmt.Errorf("gpu %d: %w", g, err)
		}
		ch.MIG = r
	}
	was := map[string]Placed{}
	for _, p := range cur.Jobs {
		was[p.Job.ID] = p
	}
	for _, p := range next.Jobs {
		old, ok := was[p.Job.ID]
		switch {
		case !ok:
			ch.Start = append(ch.Start, p.Job.ID)
		case old.Percent != p.Percent || cur.Layout.Instances[old.Instance].String() != next.Layout.Instances[p.Instance].String():
			ch.Restart = append(ch.Restart, p.Job.ID)
		}
		delete(was, p.Job.ID)
	}
	if len(was) > 0 {
		ids := make([]string, 0, len(was))
		for id := range was {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ch, fmt.Errorf("gpu %d: running jobs %s lost their place", g, strings.Join(ids, ", "))
	}
	return ch, nil
}
