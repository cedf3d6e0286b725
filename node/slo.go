package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/slo"
)

// SLOConfig is the node's latency controller (slo.* in mmk.yaml): each
// instance's kernel scheduler measures its online jobs' requests against
// their targets and, unless Off, restrains the offline jobs beside them as
// little as holds the targets (kernelsched/server SLOConfig, docs/slo.md).
type SLOConfig struct {
	// Off leaves the offline jobs alone: requests are still measured and
	// shown.
	Off bool
	// Default is the target of an online job that declares none (zero:
	// none, measured and shown only).
	Default slo.Target
	// Controller tunes the controller and names its ladder.
	Controller slo.Config
	// NoHookMarks: online jobs' hooks mark no request (slo.hook_marks
	// off); only reported latencies are measured.
	NoHookMarks bool
	// TPCMaps are GPUs' TPC slot maps by UUID (slo.tpc_maps): the kernel
	// scheduler of a GPU without MIG that has one masks by it.
	TPCMaps map[string]*slo.TPCMap
	// MaskLadder is the ladder of a GPU whose TPC masks are on (its map
	// taken and a mask checked, masks.go) where Controller.Ladder masks
	// nothing itself (slo.mask_ladder; empty: none).
	MaskLadder slo.Ladder
	// Mapper maps GPUs' TPC slots (slo.masks; nil: none is mapped, and
	// NoMasks says why).
	Mapper  TPCMapper
	NoMasks string
	// StopBound is a suspension's progress floor (slo.max_stop and the
	// others; zero: slo.DefaultStopBound).
	StopBound slo.StopBound
	// UnrestrainableAfter is how long an offline job runs without its
	// hook connecting before the SLO view calls it unrestrainable (0:
	// 30 s; a job's hook connects at its first CUDA call, seconds after
	// its start).
	UnrestrainableAfter time.Duration
	// RestrainOthers are the users whose targets may mask or suspend
	// other users' offline jobs (slo.restrain_others; "*": all).
	RestrainOthers []string
}

// mayRestrainOthers reports whether an online job's target may mask or
// suspend other users' offline jobs: its owner (mmkd's user for a job
// of none) is named in slo.restrain_others, or "*" is.
func (c *SLOConfig) mayRestrainOthers(j jobs.Job) bool {
	if c == nil {
		return false
	}
	o := jobs.Self()
	if j.Owner != nil {
		o = *j.Owner
	}
	return slices.Contains(c.RestrainOthers, "*") || (o.Name != "" && slices.Contains(c.RestrainOthers, o.Name))
}

// unrestrainableAfter is SLOConfig.UnrestrainableAfter's default.
const unrestrainableAfter = 30 * time.Second

// maxSLONotes bounds the controller's notes among one job's events; past
// it they are in mmkd's log only.
const maxSLONotes = 200

// sloState is the node's side of the latency controllers: the jobs it
// suspended, the notes written per job, each job's last view.
type sloState struct {
	mu        sync.Mutex
	suspended map[string]int // job id -> process group stopped
	notes     map[string]int
	last      map[string]JobSLO
	// base is each online job's counts as the store held them when this
	// mmkd started (Job.SLOSeen): its scheduler counts from zero again.
	base map[string]jobs.SLOSeen
}

// sloSeenEvery is how often the online jobs' request counts are saved
// (Job.SLOSeen); a crash loses at most this much of them.
const sloSeenEvery = 30 * time.Second

// keepSLOSeen saves the online jobs' counts every sloSeenEvery until ctx
// ends (Run saves them once more as it stops, before its schedulers).
func (n *Node) keepSLOSeen(ctx context.Context) {
	t := time.NewTicker(sloSeenEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.saveSLOSeen(); err != nil {
				n.cfg.Log.Warn("slo: save the jobs' request counts", "err", err)
			}
		}
	}
}

// saveSLOSeen saves every live online job's counts since submission.
func (n *Node) saveSLOSeen() error {
	seen := map[string]jobs.SLOSeen{}
	for _, js := range n.SLO().Jobs {
		if js.Live {
			seen[js.ID] = jobs.SLOSeen{Requests: js.Requests, Late: js.Late}
		}
	}
	return n.cfg.Store.SetSLOSeen(seen)
}

// JobSLO is an online job against its latency target, as its instance's
// kernel scheduler measures it.
type JobSLO struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Instance is its instance's name ("gpu0/gi1", InstanceView.Name).
	Instance string `json:"instance"`
	// GPU, GPUUUID, Profile and GPUInstance place it as DCGM exporter
	// names devices (GPUInstance -1 and Profile "" without MIG, or before
	// its use was first read).
	GPU         int    `json:"gpu"`
	GPUUUID     string `json:"gpuUUID"`
	Profile     string `json:"profile,omitempty"`
	GPUInstance int    `json:"gpuInstance"`
	// Target is the job's (or the default); Bound the bound in force in
	// ms (0 while a ratio target awaits the job's latency alone).
	Target  string  `json:"target"`
	BoundMs float64 `json:"boundMs"`
	// Source says who measured its requests: hook (first launch to the
	// synchronisation that ends the request) or reported (the service).
	Source string `json:"source"`
	// Requests and Late count every request since the job connected;
	// Attainment is the fraction within the bound.
	Requests   uint64  `json:"requests"`
	Late       uint64  `json:"late"`
	Attainment float64 `json:"attainment"`
	// Recent is the controller's window: requests, late ones, p50 and the
	// target's percentile (ms), requests a second.
	Recent     slo.Stats `json:"-"`
	RecentN    int       `json:"recentRequests"`
	RecentLate int       `json:"recentLate"`
	P50Ms      float64   `json:"p50Ms"`
	PctMs      float64   `json:"pctMs"`
	Rate       float64   `json:"rate"`
	// AloneMs is its latency alone at the target's percentile (0: not
	// measured) over AloneN requests.
	AloneMs float64 `json:"aloneMs,omitempty"`
	AloneN  int     `json:"aloneRequests,omitempty"`
	// State is met, missed, not held, unattainable, calibrating or idle;
	// Detail says it in numbers.
	State  slo.State `json:"state"`
	Detail string    `json:"detail"`
	// Rung is the restraint on its instance's offline jobs now;
	// TPCsKept the TPCs its mask asks them to keep (0: no mask), by the
	// GPU's TPC map where mmk has one (else the mask's first slots kept,
	// holes included).
	Rung     string `json:"rung"`
	TPCsKept int    `json:"tpcsKept,omitempty"`
	// Live says the job's process is connected now (else this is its
	// last view).
	Live bool      `json:"live"`
	At   time.Time `json:"at"`
}

// SLOView is every online job's standing (GET /api/v1/slo).
type SLOView struct {
	Jobs []JobSLO `json:"jobs"`
	// Instances are the controllers' rungs, by instance name.
	Instances []InstanceSLO `json:"instances"`
	// Masks are the GPUs' TPC masks: mapping, on or off and why, and the
	// ladder each GPU's controllers climb.
	Masks []MaskView `json:"masks"`
}

// InstanceSLO is one instance's latency controller; Instance is the
// instance's name ("gpu0/gi1", InstanceView.Name).
type InstanceSLO struct {
	Instance string   `json:"instance"`
	Active   bool     `json:"active"`
	Ladder   []string `json:"ladder"`
	Level    int      `json:"level"`
	Rung     string   `json:"rung"`
	// TPCsKept is the TPCs the rung's mask asks the offline jobs to
	// keep (0: no mask; JobSLO.TPCsKept).
	TPCsKept int `json:"tpcsKept,omitempty"`
	// Suspended are the offline jobs it stopped; Unstopped those its
	// rung would stop that run for their progress floor (slo.max_stop).
	Suspended []string `json:"suspended,omitempty"`
	Unstopped []string `json:"unstopped,omitempty"`
	// Unrestrainable are the offline jobs running here a while
	// (unrestrainableAfter) whose hook never connected: nothing but MPS
	// priority restrains them, and no request beside them is alone.
	Unrestrainable []string `json:"unrestrainable,omitempty"`
	// Shielded are the offline jobs of other users than the online jobs'
	// here whose targets may not mask or suspend them
	// (slo.restrain_others): only priority and guard reach them.
	Shielded []string `json:"shielded,omitempty"`
	// LastDecision is its last change of rung, with the reason in
	// numbers (nil: none yet).
	LastDecision *SLODecision `json:"lastDecision,omitempty"`
	// Restrained is what it does now to each running offline job there
	// that it reaches, by job id (jobs.Restraint, as Job and Jobs say it):
	// one request gives the dashboard every job's restraint.
	Restrained map[string]*jobs.Restraint `json:"restrained,omitempty"`
}

// JobSLOView is one job's standing and history (GET /api/v1/jobs/ID/slo).
type JobSLOView struct {
	SLO *JobSLO `json:"slo,omitempty"`
	// History is a point a second: requests, late ones, p50 and the
	// target's percentile, the bound.
	History []SLOPoint `json:"history"`
	// Decisions are its instance's last changes of rung.
	Decisions []SLODecision `json:"decisions"`
}

// SLOPoint is one second of a job's requests.
type SLOPoint struct {
	Time     time.Time `json:"time"`
	Requests int       `json:"requests"`
	Late     int       `json:"late"`
	P50Ms    float64   `json:"p50Ms"`
	PctMs    float64   `json:"pctMs"`
	BoundMs  float64   `json:"boundMs"`
}

// SLODecision is a change of rung on an instance.
type SLODecision struct {
	Time   time.Time `json:"time"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Rung   string    `json:"rung"`
	Reason string    `json:"reason"`
	Error  string    `json:"error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// sloServerConfig is the latency controller of an instance of GPU g
// (its ladder: ladderOf).
func (n *Node) sloServerConfig(key string, g gpuInfo) *server.SLOConfig {
	c := n.cfg.SLO
	if c == nil {
		return nil
	}
	ctl := c.Controller
	ctl.Ladder = n.ladderOf(g)
	return &server.SLOConfig{Controller: ctl, Default: c.Default, Off: c.Off, Suspend: n.suspendTasks(key), StopBound: c.StopBound,
		OnDecision: func(d server.SLODecision) { n.sloDecided(key, d) }}
}

// tpcMap is the TPC slot map of a GPU's kernel scheduler where the
// controller masks and MIG is off (a MIG instance numbers its own slots,
// unmeasured): its own (slo.tpc_maps), else the one mmkd took of it
// (masks.go), else the one measured on others of its product
// (slo.KnownTPCMap), else none.
func (n *Node) tpcMap(g gpuInfo) *slo.TPCMap {
	if !n.ladderMasks(g) || g.mig {
		return nil
	}
	if m := n.takenMap(g.state.UUID); m != nil && m.SMs == g.state.SMs {
		return m
	}
	if m := n.cfg.SLO.TPCMaps[g.state.UUID]; m != nil {
		if m.SMs == g.state.SMs {
			return m
		}
		n.cfg.Log.Warn("TPC map not used: taken on a GPU of another SM count", "gpu", g.state.UUID, "mapSMs", m.SMs, "sms", g.state.SMs)
	}
	return slo.KnownTPCMap(g.state.Name, g.state.SMs)
}

// ladderHolds reports whether GPU g's controllers may hold launches (a
// rung with guard): the offline jobs then need kernel profiles.
func (n *Node) ladderHolds(g gpuInfo) bool {
	if n.cfg.SLO == nil || n.cfg.SLO.Off {
		return false
	}
	return slices.ContainsFunc(n.ladderOf(g), slo.Rung.Holds)
}

// ladderMasks reports whether some rung of GPU g's ladder masks TPCs:
// offline jobs there then get MMK_TPC_MASK=1.
func (n *Node) ladderMasks(g gpuInfo) bool {
	return n.cfg.SLO != nil && !n.cfg.SLO.Off && n.ladderOf(g).UsesTPCs()
}

// suspendTasks is an instance's Suspend: it stops (SIGSTOP) or continues
// the process groups of the jobs the tasks belong to.
func (n *Node) suspendTasks(key string) func(pids []int, stop bool, why server.SuspendCause) error {
	return func(pids []int, stop bool, why server.SuspendCause) error {
		var errs []string
		done := map[string]bool{}
		for _, pid := range pids {
			j, err := n.jobOfProcess(pid, key)
			if err != nil {
				// A process that went: nothing to stop or continue.
				continue
			}
			if done[j.ID] || (stop && j.State != jobs.Running) {
				// A job being stopped keeps running until it ends.
				continue
			}
			done[j.ID] = true
			if err := n.suspendJob(j, stop, n.causeWords(why)); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
}

// causeWords says for whom a suspension is: each service's job, its
// owner and its standing in numbers, and the decision's reason ("" when
// there is none to say, as for a resume).
func (n *Node) causeWords(why server.SuspendCause) string {
	var parts []string
	for _, sv := range why.Services {
		who := sv.Name
		if j, ok := n.get(sv.Job); ok {
			who = "job " + j.ID + " (" + j.Spec.Name
			if j.Owner != nil {
				who += ", " + j.Owner.String()
			}
			who += ")"
		}
		if sv.Detail != "" {
			who += ": " + sv.Detail
		}
		parts = append(parts, who)
	}
	words := ""
	if len(parts) > 0 {
		words = " for the target of " + strings.Join(parts, "; ")
	}
	if why.Reason != "" {
		words += " (decision: " + why.Reason + ")"
	}
	return words
}

// suspendJob stops or continues a job and notes it, with why
// (causeWords) on a stop: its cgroup frozen where it has one (every
// process of the job, also one that left its process group with setsid),
// else its process group signalled (SIGSTOP, SIGCONT). A resume thaws
// and signals both, whichever stopped it.
func (n *Node) suspendJob(j jobs.Job, stop bool, why string) error {
	if j.PID <= 0 {
		return nil
	}
	what := "resumed"
	if stop {
		what = "suspended"
	}
	frozen, ferr := n.cfg.Runner.Freeze(j.ID, stop)
	if ferr != nil {
		n.cfg.Log.Warn("slo: job's cgroup", "job", j.ID, "freeze", stop, "err", ferr)
	}
	how := "its cgroup frozen"
	if !stop || !frozen || ferr != nil {
		sig := syscall.SIGCONT
		if stop {
			sig, how = syscall.SIGSTOP, "its process group stopped (no cgroup to freeze)"
		}
		if err := syscall.Kill(-j.PID, sig); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("job %s: %s its processes: %w", j.ID, what, err)
		}
	}
	n.slo.mu.Lock()
	if stop {
		n.slo.suspended[j.ID] = j.PID
	} else {
		delete(n.slo.suspended, j.ID)
	}
	n.slo.mu.Unlock()
	if !stop {
		how = ""
	}
	n.cfg.Log.Info("slo: "+what+" offline job", "job", j.ID, "pgid", j.PID, "how", how, "why", why)
	n.note(j.ID, "slo: "+what+" by its instance's latency controller"+why)
	return nil
}

// resumeIfSuspended continues a job the latency controller stopped, so
// that a stop reaches it (SIGTERM waits in a stopped process).
func (n *Node) resumeIfSuspended(id string) {
	n.slo.mu.Lock()
	pg, ok := n.slo.suspended[id]
	delete(n.slo.suspended, id)
	n.slo.mu.Unlock()
	if ok {
		if _, err := n.cfg.Runner.Freeze(id, false); err != nil {
			n.cfg.Log.Warn("slo: thaw job before stopping it", "job", id, "err", err)
		}
		if err := syscall.Kill(-pg, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			n.cfg.Log.Warn("slo: resume job before stopping it", "job", id, "err", err)
		}
	}
}

// sloForget drops what the latency controllers kept of a job that ended.
func (n *Node) sloForget(id string) {
	n.slo.mu.Lock()
	delete(n.slo.suspended, id)
	delete(n.slo.notes, id)
	n.slo.mu.Unlock()
}

// sloDecided logs a controller's change of rung and notes it on the jobs
// of the instance.
func (n *Node) sloDecided(key string, d server.SLODecision) {
	n.cfg.Log.Info("slo: rung changed", "instance", key, "from", d.From, "to", d.To, "rung", d.Rung.String(), "reason", d.Reason, "err", d.Err)
	note := "slo: " + d.Reason
	if d.Err != "" {
		note += " (not all applied: " + d.Err + ")"
	}
	seen := map[string]bool{}
	for _, s := range d.Services {
		if s.Job != "" && !seen[s.Job] {
			seen[s.Job] = true
			n.note(s.Job, note)
		}
	}
	for _, o := range d.Offline {
		if o.Job != "" && !seen[o.Job] {
			seen[o.Job] = true
			n.note(o.Job, note)
		}
	}
	n.notify()
}

// note adds an event to a job without changing its state, at most
// maxSLONotes per job.
func (n *Node) note(id, reason string) {
	n.slo.mu.Lock()
	c := n.slo.notes[id]
	n.slo.notes[id] = c + 1
	n.slo.mu.Unlock()
	if c >= maxSLONotes {
		return
	}
	if c == maxSLONotes-1 {
		reason += fmt.Sprintf(" (the last of %d notes kept for this job; later ones are in mmkd's log)", maxSLONotes)
	}
	if err := n.cfg.Store.Note(id, n.cfg.Now(), reason); err != nil {
		n.cfg.Log.Warn("slo: note on job", "job", id, "err", err)
	}
}

// SLO is every online job's standing against its target: the live ones
// from their instances' kernel schedulers, the others as last seen.
func (n *Node) SLO() SLOView {
	v := SLOView{Jobs: []JobSLO{}, Instances: []InstanceSLO{}, Masks: n.maskViews()}
	live := map[string]bool{}
	for key, in := range n.sloInstances(false) {
		sv := in.SLOView
		is := InstanceSLO{Instance: in.name, Active: sv.Active, Ladder: sv.Ladder, Level: sv.Level, Rung: sv.Rung, TPCsKept: sv.TPCKeep}
		n.slo.mu.Lock()
		for id := range n.slo.suspended {
			if j, ok := n.get(id); ok && j.Placement != nil && j.Placement.InstanceKey == key {
				is.Suspended = append(is.Suspended, id)
			}
		}
		n.slo.mu.Unlock()
		slices.Sort(is.Suspended)
		for _, ref := range sv.Offline {
			if slices.Contains(sv.Unstopped, ref.PID) && ref.Job != "" && !slices.Contains(is.Unstopped, ref.Job) {
				is.Unstopped = append(is.Unstopped, ref.Job)
			}
		}
		slices.Sort(is.Unstopped)
		for _, ref := range sv.Offline {
			if slices.Contains(sv.Shielded, ref.PID) && ref.Job != "" && !slices.Contains(is.Shielded, ref.Job) {
				is.Shielded = append(is.Shielded, ref.Job)
			}
		}
		slices.Sort(is.Shielded)
		if n := len(sv.Decisions); n > 0 {
			d := sv.Decisions[n-1]
			is.LastDecision = &SLODecision{Time: d.Wall, From: d.From, To: d.To, Rung: d.Rung.String(), Reason: d.Reason, Error: d.Err}
		}
		for _, id := range sv.Unseen {
			if j, ok := n.get(id); ok && j.State == jobs.Running && n.cfg.Now().Sub(j.StartedAt) >= cmp.Or(n.cfg.SLO.UnrestrainableAfter, unrestrainableAfter) {
				is.Unrestrainable = append(is.Unrestrainable, id)
			}
		}
		slices.Sort(is.Unrestrainable)
		for _, ref := range sv.Offline {
			if _, done := is.Restrained[ref.Job]; done || ref.Job == "" {
				continue
			}
			if r := restraintOf(ref.Job, in); r != nil {
				if is.Restrained == nil {
					is.Restrained = map[string]*jobs.Restraint{}
				}
				is.Restrained[ref.Job] = r
			}
		}
		v.Instances = append(v.Instances, is)
		for _, s := range sv.Services {
			if s.Job == "" {
				continue
			}
			js := jobSLO(in.name, sv, s)
			if j, ok := n.get(s.Job); ok {
				n.placeSLO(&js, j)
			}
			live[s.Job] = true
			v.Jobs = append(v.Jobs, js)
			n.slo.mu.Lock()
			n.slo.last[s.Job] = js
			n.slo.mu.Unlock()
		}
	}
	n.slo.mu.Lock()
	for id, js := range n.slo.last {
		if live[id] {
			continue
		}
		if _, ok := n.get(id); !ok {
			delete(n.slo.last, id) // removed by retention
			continue
		}
		js.Live = false
		v.Jobs = append(v.Jobs, js)
	}
	n.slo.mu.Unlock()
	slices.SortFunc(v.Jobs, func(a, b JobSLO) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(v.Instances, func(a, b InstanceSLO) int { return strings.Compare(a.Instance, b.Instance) })
	return v
}

// JobSLO is one job's standing, its history and its instance's
// decisions; an offline job, or one that never connected, has none.
func (n *Node) JobSLO(id string) (JobSLOView, error) {
	j, ok := n.get(id)
	if !ok {
		return JobSLOView{}, fmt.Errorf("job %s: %w", id, jobs.ErrNotFound)
	}
	v := JobSLOView{History: []SLOPoint{}, Decisions: []SLODecision{}}
	if j.Placement == nil {
		return v, nil
	}
	in, ok := n.sloInstances(true)[j.Placement.InstanceKey]
	if ok {
		sv := in.SLOView
		for _, d := range sv.Decisions {
			v.Decisions = append(v.Decisions, SLODecision{Time: d.Wall, From: d.From, To: d.To, Rung: d.Rung.String(), Reason: d.Reason, Error: d.Err})
		}
		for _, s := range sv.Services {
			if s.Job != id {
				continue
			}
			js := jobSLO(in.name, sv, s)
			n.placeSLO(&js, j)
			v.SLO = &js
			for _, p := range sv.History[s.PID] {
				v.History = append(v.History, SLOPoint{Time: p.Time, Requests: p.N, Late: p.Late, P50Ms: ms(p.P50), PctMs: ms(p.Pct), BoundMs: ms(p.Bound)})
			}
		}
	}
	if v.SLO == nil {
		n.slo.mu.Lock()
		if js, ok := n.slo.last[id]; ok {
			js.Live = false
			v.SLO = &js
		}
		n.slo.mu.Unlock()
	}
	return v, nil
}

// placeSLO names a job's view and places it on its device: the GPU
// instance as the last reading of its use found it (node/usage.go).
func (n *Node) placeSLO(js *JobSLO, j jobs.Job) {
	js.Name, js.GPUInstance = j.Spec.Name, -1
	// Counted since submission: what the store held at mmkd's start and
	// what the scheduler counted since (issue 53: attainment restarted
	// from zero with mmkd).
	n.slo.mu.Lock()
	b := n.slo.base[j.ID]
	n.slo.mu.Unlock()
	if b.Requests > 0 {
		js.Requests, js.Late = js.Requests+b.Requests, js.Late+b.Late
		js.Attainment = 1 - float64(js.Late)/float64(js.Requests)
	}
	if pl := j.Placement; pl != nil {
		js.GPU, js.GPUUUID, js.Profile = pl.GPU, pl.GPUUUID, pl.Profile
	}
	n.usageMu.Lock()
	if u, ok := n.usage[j.ID]; ok && u.last.ID == j.ID {
		js.GPUInstance = u.last.GPUInstance
	}
	n.usageMu.Unlock()
}

// jobSLO is a service's view as the API shows it, on the instance of
// that name.
func jobSLO(name string, sv server.SLOView, s server.ServiceView) JobSLO {
	src := slo.Hook
	if s.Reported {
		src = slo.Reported
	}
	js := JobSLO{ID: s.Job, Instance: name, Target: s.Target.String(), BoundMs: ms(s.Bound), Source: src.String(),
		Requests: s.Total, Late: s.Late, Attainment: 1, Recent: s.Recent, RecentN: s.Recent.N, RecentLate: s.Recent.Late,
		P50Ms: ms(s.Recent.P50), PctMs: ms(s.Recent.Pct), Rate: s.Recent.Rate, AloneMs: ms(s.Alone), AloneN: s.AloneN,
		State: s.State, Detail: s.Detail, Rung: sv.Rung, TPCsKept: sv.TPCKeep, Live: true, At: time.Now()}
	if s.Total > 0 {
		js.Attainment = 1 - float64(s.Late)/float64(s.Total)
	}
	return js
}

// instanceSLO is an instance's controller's view and the instance's name.
type instanceSLO struct {
	server.SLOView
	name string
}

// sloInstances are the instances' controllers' views, by instance key
// (the key of the instance's scheduler and of its jobs' placements),
// each with its instance's name, which the API and /metrics show.
func (n *Node) sloInstances(history bool) map[string]instanceSLO {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := map[string]instanceSLO{}
	for k, s := range n.scheds {
		if v := s.srv.SLO(history); v.Ladder != nil {
			out[k] = instanceSLO{SLOView: v, name: n.instanceName(k)}
		}
	}
	return out
}

// sloViews are the instances' controllers' views, by instance key.
func (n *Node) sloViews(history bool) map[string]server.SLOView {
	out := map[string]server.SLOView{}
	for k, in := range n.sloInstances(history) {
		out[k] = in.SLOView
	}
	return out
}

// sloMeasured is every online job's last measured standing, by job:
// live from its instance's scheduler, else as last shown. Call it without
// the node's lock held.
func (n *Node) sloMeasured() map[string]JobSLO {
	out := map[string]JobSLO{}
	for _, in := range n.sloInstances(false) {
		for _, s := range in.Services {
			if s.Job != "" {
				out[s.Job] = jobSLO(in.name, in.SLOView, s)
			}
		}
	}
	n.slo.mu.Lock()
	for id, js := range n.slo.last {
		if _, ok := out[id]; !ok {
			out[id] = js
		}
	}
	n.slo.mu.Unlock()
	return out
}

// noteBelowNeed says on an online job's events, once it starts, that it
// was placed where its predicted speed is below what its target needs
// (placement.slo_max_wait let it go where it fits, or no instance gives
// more), with both numbers (issue 53: the reason was blank).
func (n *Node) noteBelowNeed(id string, speed float64) {
	j, ok := n.get(id)
	if !ok || !j.Online() {
		return
	}
	need, _ := n.sloNeed(&j, n.sloMeasured()[id])
	if need <= 0 || speed >= need {
		return
	}
	var def slo.Target
	if n.cfg.SLO != nil {
		def = n.cfg.SLO.Default
	}
	reason := fmt.Sprintf("placed below its target's need: a predicted speed of %.2f of its speed alone where its target %s needs %.2f", speed, j.Target(def), need)
	if n.cfg.SLOMaxWait > 0 && n.cfg.Now().Sub(j.CreatedAt) >= n.cfg.SLOMaxWait {
		reason += fmt.Sprintf(" (it waited placement.slo_max_wait, %v, for more)", n.cfg.SLOMaxWait)
	}
	n.cfg.Log.Info("placement: "+reason, "job", id)
	if err := n.cfg.Store.Note(id, n.cfg.Now(), reason); err != nil {
		n.cfg.Log.Warn("placement: note on job", "job", id, "err", err)
	}
}

// sloNeed is an online job's need and load for Algorithm 1's SLO guard:
// the least speed, relative to alone, that its target (or slo.default)
// leaves it (slo.Target.Need; 0 without a target, or with an absolute
// one before its latency alone is measured), and the share of time its
// requests keep it busy as measured: requests a second times their
// median latency, an upper estimate (a request's latency in place
// includes its wait and its co-runners' slowdown; 0 before any request:
// taken as always busy). A job that is not connected keeps its last
// measurement as the API last showed it.
func (n *Node) sloNeed(j *jobs.Job, m JobSLO) (need, load float64) {
	var def slo.Target
	if n.cfg.SLO != nil {
		def = n.cfg.SLO.Default
	}
	t := j.Target(def)
	need = t.Need(time.Duration(m.AloneMs * float64(time.Millisecond)))
	if m.Rate > 0 && m.P50Ms > 0 {
		load = min(1, m.Rate*m.P50Ms/1000)
	}
	return need, load
}
