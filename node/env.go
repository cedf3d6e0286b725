package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/mps"
)

// jobEnv is the environment a placed job starts with: the base
// environment less what mmk sets, the spec's variables, then mmk's: the
// device, the MPS daemon and percentage, the hook and its scheduler, the
// job's identity and the checkpoint contract (docs/jobs.md).
func (n *Node) jobEnv(ctx context.Context, j *jobs.Job, g gpuInfo) ([]string, error) {
	pl := j.Placement
	env := make([]string, 0, len(n.cfg.BaseEnv)+len(j.Spec.Env)+16)
	for _, kv := range n.cfg.BaseEnv {
		k, _, _ := strings.Cut(kv, "=")
		if jobs.ReservedEnv(k) {
			continue
		}
		if _, ok := j.Spec.Env[k]; ok {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(j.Spec.Env))
	for k := range j.Spec.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+j.Spec.Env[k])
	}
	env = append(env, "CUDA_VISIBLE_DEVICES="+pl.Device)
	// The MPS share only under MPS: without it nothing enforces one.
	if n.cfg.MPS != nil {
		env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(pl.MPSPercent))
		if _, err := n.cfg.MPS.Ensure(ctx, mps.Instance{Key: pl.InstanceKey, Device: pl.Device}); err != nil {
			return nil, fmt.Errorf("MPS daemon of %s: %w", pl.InstanceKey, err)
		}
		mpsEnv, err := n.cfg.MPS.ClientEnv(pl.InstanceKey, pl.MPSPercent)
		if err != nil {
			return nil, err
		}
		for _, kv := range mpsEnv {
			if !strings.HasPrefix(kv, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=") {
				env = append(env, kv)
			}
		}
		env = append(env, mps.PriorityEnv+"="+strconv.Itoa(j.Spec.MPSClientPriority()))
		if pl.MemLimitMiB > 0 {
			env = append(env, mps.MemLimitEnv+"="+mps.MemLimitValue(pl.MemLimitMiB))
		}
	}
	if s := n.cfg.Sched; s != nil {
		sock, err := n.schedulerSocket(j, g)
		if err != nil {
			return nil, err
		}
		online := "0"
		if j.Online() {
			online = "1"
		}
		env = append(env, "CUDA_INJECTION64_PATH="+s.Hook, "MMK_SCHED_SOCKET="+sock,
			"MMK_PRIORITY="+strconv.Itoa(j.Priority), "MMK_ONLINE="+online,
			"MMK_TASK_KEY="+j.TaskKey, "MMK_TASK_NAME="+truncate(j.Spec.Name, 63))
		if s.Cupti != "" {
			env = append(env, "MMK_CUPTI_PATH="+s.Cupti)
		}
		if !j.Online() && n.ladderMasks(g) {
			// The latency controller may mask the job's TPCs (protocol
			// step 11): its hook installs the driver callback.
			env = append(env, "MMK_TPC_MASK=1")
		}
		penv, err := n.profilePhase(j, g)
		if err != nil {
			return nil, err
		}
		env = append(env, penv...)
	}
	ckpt, err := n.cfg.Runner.CheckpointDir(j.ID)
	if err != nil {
		return nil, err
	}
	env = append(env, "MMK_JOB_ID="+j.ID, "MMK_CHECKPOINT_DIR="+ckpt, "MMK_RESTART_COUNT="+strconv.Itoa(j.Restarts))
	return env, nil
}

// truncate cuts s to at most n bytes, at the start of a UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// BaseEnv is mmkd's environment without its own configuration variables
// (MMK_*) and what mmk sets for jobs: the environment jobs start from.
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !jobs.ReservedEnv(k) {
			out = append(out, kv)
		}
	}
	return out
}
