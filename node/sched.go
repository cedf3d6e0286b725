package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/slo"
	"github.com/mmkgpu/mmk/trace"
)

// SchedConfig sets up kernel scheduling: one kernelsched server per
// instance, and the hook every job gets.
type SchedConfig struct {
	// Policy is a kernelsched policy name.
	Policy string
	// Hook is the hook library (CUDA_INJECTION64_PATH); Cupti, if set,
	// the libcupti it loads (MMK_CUPTI_PATH).
	Hook, Cupti string
	// SocketDir holds the servers' sockets; ProfileDir the kernel
	// profiles (kernelsched.ProfilePath).
	SocketDir, ProfileDir string
}

// profilePhase starts the profiling phase of a job whose task key has no
// kernel profile yet and that no other running job is profiling: the
// hook measures its first runs (trace.ProfilePhase) and the loop turns the
// trace into the profile, which the instance's scheduler then loads. A
// policy that decides without profiles (fifo, the default) needs none,
// unless the latency controller may hold launches (an offline job is then
// profiled): the job then runs unprofiled, and a profile taken earlier
// stays in ProfileDir for a policy that needs it.
func (n *Node) profilePhase(j *jobs.Job, g gpuInfo) ([]string, error) {
	c := n.cfg.Sched
	if c.ProfileDir == "" {
		return nil, nil
	}
	need, err := kernelsched.NeedsProfiles(c.Policy)
	if err != nil {
		return nil, err
	}
	// The latency controller may switch to guard, which holds by the
	// offline jobs' predicted block times.
	if !need && !(n.ladderHolds(g) && !j.Online()) {
		return nil, nil
	}
	for _, p := range n.phases {
		if p.Key == j.TaskKey {
			return nil, nil
		}
	}
	if err := os.MkdirAll(c.ProfileDir, 0o755); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	o := trace.DefaultProfileOptions()
	if j.Owner != nil && j.Owner.UID != os.Geteuid() {
		// The hook runs as the job's user, who cannot write into the
		// profile directory (mmkd's): it writes its trace into a
		// directory of theirs, and mmkd stores the profile.
		o.Owner = &trace.TraceOwner{UID: j.Owner.UID, GID: j.Owner.GID}
	}
	p, env, err := trace.NewProfilePhase(c.ProfileDir, j.TaskKey, j.ID, o)
	if err != nil || p == nil {
		return nil, err
	}
	n.phases[j.ID] = p
	n.cfg.Log.Info("profiling phase", "job", j.ID, "taskKey", j.TaskKey)
	return env, nil
}

// collectProfiles turns the profiling phases' traces into profiles; a
// phase whose job ended without a trace is dropped.
func (n *Node) collectProfiles() {
	for id, p := range n.phases {
		prof, err := p.Collect()
		switch {
		case err != nil:
			n.cfg.Log.Warn("profiling phase", "job", id, "err", err)
		case prof != nil:
			n.cfg.Log.Info("kernel profile written", "job", id, "taskKey", p.Key, "runs", prof.Runs, "kernelIDs", len(prof.Kernels))
		}
		if p.Done() {
			delete(n.phases, id)
			continue
		}
		if j, ok := n.get(id); !ok || j.State.Terminal() {
			// The hook writes its trace at exit; a job that ended
			// without one (no kernel, no GPU) leaves nothing to wait for.
			if err := p.Close(); err != nil {
				n.cfg.Log.Warn("profiling phase", "job", id, "err", err)
			}
			delete(n.phases, id)
		}
	}
}

// sched is one running kernel scheduler server.
type sched struct {
	srv    *server.Server
	socket string
	stop   context.CancelFunc
	done   chan struct{}
	// ladder is its controller's, fixed when it started (ladderOf).
	ladder slo.Ladder
}

// maxSocketPath is the longest path a Unix socket address holds.
const maxSocketPath = 107

// ensureScheduler returns the socket of the instance's kernel scheduler,
// starting the server if it does not run.
func (n *Node) ensureScheduler(key string, g gpuInfo) (string, error) {
	n.mu.RLock()
	s, ok := n.scheds[key]
	n.mu.RUnlock()
	if ok {
		return s.socket, nil
	}
	c := n.cfg.Sched
	sock := filepath.Join(c.SocketDir, key+".sock")
	if len(sock) > maxSocketPath {
		// Too long for a Unix socket address: a short name under the
		// system's temporary directory, the same for the same path.
		sum := sha256.Sum256([]byte(sock))
		sock = filepath.Join(os.TempDir(), "mmk-"+hex.EncodeToString(sum[:6])+".sock")
	}
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		return "", fmt.Errorf("kernel scheduler of %s: %w", key, err)
	}
	sms := g.state.SMs
	if i := slices.Index(g.keys, key); i >= 0 && g.mig {
		sms = g.layout.Instances[i].Profile.SMs
	}
	tpcMap := n.tpcMap(g)
	sloCfg := n.sloServerConfig(key, g)
	srv, err := server.New(server.Config{
		Socket: sock, Policy: c.Policy, Sched: kernelsched.Config{SMs: sms},
		ProfileDir: c.ProfileDir, Log: n.cfg.Log.With("instance", key), OnConnect: n.connected, Identify: n.identifyTask(key),
		SLO: sloCfg, NoRequestMarks: n.cfg.SLO != nil && n.cfg.SLO.NoHookMarks, TPCMap: tpcMap,
	})
	if err != nil {
		return "", fmt.Errorf("kernel scheduler of %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s = &sched{srv: srv, socket: sock, stop: cancel, done: make(chan struct{})}
	if sloCfg != nil {
		s.ladder = sloCfg.Controller.Ladder
	}
	go func() {
		defer close(s.done)
		if err := srv.Serve(ctx); err != nil {
			n.cfg.Log.Error("kernel scheduler stopped", "instance", key, "err", err)
		}
	}()
	n.mu.Lock()
	n.scheds[key] = s
	n.mu.Unlock()
	n.notify()
	n.cfg.Log.Info("kernel scheduler serving", "instance", key, "policy", c.Policy, "socket", sock, "tpcMap", tpcMap != nil)
	return sock, nil
}

// pruneSchedulers stops the servers of instances no longer in any
// layout.
func (n *Node) pruneSchedulers(gpus []gpuInfo) {
	live := map[string]bool{}
	for _, g := range gpus {
		for _, k := range g.keys {
			live[k] = true
		}
	}
	n.mu.Lock()
	var gone []*sched
	for k, s := range n.scheds {
		if !live[k] {
			gone = append(gone, s)
			delete(n.scheds, k)
		}
	}
	n.mu.Unlock()
	for _, s := range gone {
		s.stop()
		<-s.done
	}
}

// tellPlacedOffline tells each instance's kernel scheduler which offline
// jobs run there (placed, running, restarting or stopping), hooked or
// not (server.SetPlacedOffline).
func (n *Node) tellPlacedOffline() {
	n.mu.RLock()
	placed := map[string][]string{}
	for _, j := range n.order {
		if j.Spec.Kind == jobs.Offline && holdsInstance(j) {
			placed[j.Placement.InstanceKey] = append(placed[j.Placement.InstanceKey], j.ID)
		}
	}
	scheds := maps.Clone(n.scheds)
	n.mu.RUnlock()
	for k, s := range scheds {
		s.srv.SetPlacedOffline(placed[k])
	}
}

// stopScheduler stops the server of one instance, if it runs.
func (n *Node) stopScheduler(key string) {
	n.mu.Lock()
	s, ok := n.scheds[key]
	delete(n.scheds, key)
	n.mu.Unlock()
	if ok {
		s.stop()
		<-s.done
	}
}

// stopSchedulers stops every server (mmkd is stopping; the hooks of
// running jobs fail open and reconnect to the next mmkd).
func (n *Node) stopSchedulers() {
	n.pruneSchedulers(nil)
}

// Schedulers are the instances' kernel schedulers, by instance key.
func (n *Node) Schedulers() []SchedView {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]SchedView, 0, len(n.scheds))
	for k, s := range n.scheds {
		out = append(out, SchedView{Instance: k, Name: n.instanceName(k), Policy: n.cfg.Sched.Policy, Socket: s.socket, Counters: s.srv.Counters(),
			Queues: s.srv.Queues(), Tasks: s.srv.Tasks(), Timeline: s.srv.Timeline()})
	}
	slices.SortFunc(out, func(a, b SchedView) int { return strings.Compare(a.Instance, b.Instance) })
	return out
}

// instanceName is the name (InstanceView.Name) of the instance of key in
// the published plan, else the key. The caller holds n.mu.
func (n *Node) instanceName(key string) string {
	for _, g := range n.view.GPUs {
		for _, in := range g.Instances {
			if in.Key == key {
				return in.Name
			}
		}
	}
	return key
}
