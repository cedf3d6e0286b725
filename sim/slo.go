package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mmkgpu/mmk/slo"
)

// SLOConfig runs mmk's latency controller in a simulation (Config.SLO):
// the same slo.Controller the kernel scheduler server hosts is told of
// each online task's requests as they end and, every tick, picks its
// rung, which the simulation applies as the server does: guard with a
// fixed threshold in the scheduler while the rung holds launches (the
// configured policy otherwise), and the offline tasks' processes stopped
// while it suspends them (kernels already released run on), and offline
// kernels held to part of the SMs while it masks TPCs (maskSMs).
type SLOConfig struct {
	Controller slo.Config
	// Targets are the online tasks' targets, by task index; an online
	// task without one is measured only.
	Targets map[int]slo.Target
	// TPCMap: the kernel scheduler masks by the GPU's TPC slot map
	// (slo.tpc_maps), so a tpcs=F rung keeps round(F·TPCs) of them (no
	// more than the mask can take); off, it keeps the mask's first slots.
	// On a 132-SM GPU the slots are laid out as measured on an H100
	// (slo.H100TPCMap); elsewhere each slot is a TPC.
	TPCMap bool
}

// RatePhase is a stretch of a Poisson task's load: its rate until Until.
type RatePhase struct {
	Until time.Duration
	Rate  float64
}

// Request is one request of a task: when it ended and its latency.
type Request struct {
	End, Latency time.Duration
}

// SLOResult is what the controller did in a simulation.
type SLOResult struct {
	Decisions []slo.Decision
	// OnRung is the time spent on each rung of the ladder.
	OnRung []time.Duration
	// Ladder names the rungs.
	Ladder []string
	// Status is each service's standing at the end.
	Status []slo.ServiceStatus
}

// sloSim is the controller's side of a simulation.
type sloSim struct {
	ctrl    *slo.Controller
	base    string
	tick    time.Duration
	applied slo.Rung
	// maskSMs is the SMs the applied rung leaves masked tasks (0: no
	// mask), and offlineRank each task's place among the offline ones
	// by id (-1: online), which tpcs=F@N counts.
	maskSMs     int
	offlineRank []int
	changedAt   time.Duration
	res         SLOResult
	suspended   bool
}

// newSLO checks and builds the controller.
func newSLO(cfg *SLOConfig, policy string, tasks []Task) (*sloSim, error) {
	if cfg == nil {
		return nil, nil
	}
	c, err := slo.New(cfg.Controller)
	if err != nil {
		return nil, err
	}
	rank, offline := make([]int, len(tasks)), 0
	for i, t := range tasks {
		rank[i] = -1
		if !t.Online {
			rank[i] = offline
			offline++
			if _, ok := cfg.Targets[i]; ok {
				return nil, fmt.Errorf("slo: task %q has a target and is not online", t.Name)
			}
			continue
		}
		c.AddService(strconv.Itoa(i), cfg.Targets[i])
	}
	if l := c.Config().Ladder; l.UsesTPCs() {
		// As the server does: every offline task can mask here.
		c.SetAlike(l.Alike(offline))
	}
	c.SetOffline(offline)
	ss := &sloSim{ctrl: c, base: policy, tick: max(c.Config().Tick/4, time.Millisecond), offlineRank: rank}
	ss.res.Ladder = c.Config().Ladder.Strings()
	ss.res.OnRung = make([]time.Duration, len(ss.res.Ladder))
	return ss, nil
}

// sloRequest tells the controller of an online task's request: its
// service time, from its first launch (as the hook measures it), and
// its latency, from its arrival (as the service reports it).
func (s *sim) sloRequest(t *simTask, service, lat time.Duration) {
	if s.slo == nil || !t.spec.Online {
		return
	}
	id := strconv.Itoa(int(t.id))
	s.slo.ctrl.Observe(id, slo.Sample{At: s.now, Latency: service, Source: slo.Hook}, false)
	s.slo.ctrl.Observe(id, slo.Sample{At: s.now, Latency: lat, Source: slo.Reported}, false)
}

// sloStep lets the controller decide and applies its rung.
func (s *sim) sloStep() error {
	ss := s.slo
	ss.res.OnRung[ss.ctrl.Level()] += s.now - ss.changedAt
	ss.changedAt = s.now
	if d, ok := ss.ctrl.Step(s.now); ok {
		ss.res.Decisions = append(ss.res.Decisions, d)
	}
	r := ss.ctrl.Rung()
	if r != ss.applied {
		if r.Holds() != ss.applied.Holds() || r.Tau != ss.applied.Tau || r.HoldAll != ss.applied.HoldAll {
			name, cfg := ss.base, s.cfg.Sched
			if r.Holds() {
				name = "guard"
				cfg.Guard.Tau = r.Tau
				if r.HoldAll {
					cfg.Guard.Tau = -1
				}
			}
			if err := s.sched.SetPolicy(name, cfg); err != nil {
				return fmt.Errorf("simulate: slo rung %s: %w", r, err)
			}
			s.hooked = name != "fifo"
		}
		if r.Suspend != ss.applied.Suspend {
			s.suspend(r.Suspend)
		}
		ss.applied, ss.maskSMs = r, maskedSMs(r, s.sms, s.cfg.SLO.TPCMap)
	}
	s.push(s.now+ss.tick, evSLO, -1)
	return s.schedule()
}

// maskSMs is the SMs the rung in force lets task t's kernels use (0: no
// mask): a tpcs=F rung masks an offline task, or the first TPCTasks of
// them by id (the order they connect in).
func (s *sim) maskSMs(t *simTask) int {
	if s.slo == nil || s.slo.maskSMs == 0 {
		return 0
	}
	rank := s.slo.offlineRank[t.id]
	if rank < 0 || s.slo.applied.TPCTasks > 0 && rank >= s.slo.applied.TPCTasks || s.slo.applied.PerRequest && !s.inRequest() {
		return 0
	}
	return s.slo.maskSMs
}

// inRequest reports whether an online task's request is in course (a
// rung's mask during requests only holds then).
func (s *sim) inRequest() bool {
	for _, t := range s.tasks {
		if t.spec.Online && t.inReq {
			return true
		}
	}
	return false
}

// maskedSMs is the SMs rung r leaves a task it masks on an instance of
// sms SMs (0: r masks nothing), two SMs a TPC. The kernel scheduler asks
// the hooks to keep the mask's first slots: KeptTPCs of them, or with the
// GPU's map (byMap) the count whose mask takes the last tpcs-KeptTPCs
// maskable TPCs (slo.TPCMap.KeepSlots). On a 132-SM GPU (H100, H200) the
// slots are those measured on an H100 (slo.H100TPCMap: 72, ten holes,
// four TPCs no slot masks), so without the map tpcs=0.995 masks six TPCs
// and tpcs=0.5 (33 slots) 36; elsewhere each slot is a TPC.
func maskedSMs(r slo.Rung, sms int, byMap bool) int {
	if r.TPCs <= 0 {
		return 0
	}
	tpcs := slo.TPCsOf(sms)
	keep := slo.KeptTPCs(r.TPCs, tpcs)
	if sms != h100.SMs {
		return 2 * min(keep, tpcs)
	}
	var served *slo.TPCMap // the kernel scheduler's map
	if byMap {
		served = h100
	}
	return 2 * h100.Kept(served.KeepSlots(keep, tpcs), tpcs)
}

// h100 is the TPC slot layout of a 132-SM GPU in the simulator.
var h100 = slo.H100TPCMap()

// suspend stops or continues the offline tasks' processes: a stopped one
// makes no launch call; kernels it already launched run on.
func (s *sim) suspend(stop bool) {
	s.slo.suspended = stop
	if stop {
		return
	}
	for i, t := range s.tasks {
		if t.stopped {
			t.stopped = false
			s.push(s.now, evCall, i)
		}
	}
}

// sloResult closes the controller's accounts.
func (s *sim) sloResult() *SLOResult {
	if s.slo == nil {
		return nil
	}
	ss := s.slo
	ss.res.OnRung[ss.ctrl.Level()] += s.now - ss.changedAt
	ss.changedAt = s.now
	ss.res.Status = ss.ctrl.Status(s.now)
	return &ss.res
}

// rateAt is a Poisson task's rate at now: its phase's, else its Rate.
func (t *simTask) rateAt(now time.Duration) float64 {
	for _, p := range t.spec.Phases {
		if now < p.Until {
			return p.Rate
		}
	}
	return t.spec.Rate
}

// validPhases checks a task's load phases.
func validPhases(ps []RatePhase) error {
	var last time.Duration
	for i, p := range ps {
		if p.Until <= last || !(p.Rate > 0 && p.Rate <= 1e6) {
			return fmt.Errorf("phase %d: until %v must come after the last, rate %v be in (0, 1e6]", i, p.Until, p.Rate)
		}
		last = p.Until
	}
	return nil
}
