// Package configs holds mmk's configuration: the defaults that ship in the
// binaries (mmk.yaml, embedded), and Load, which layers a configuration
// file, MMK_* environment variables and command-line flags over them with
// viper, in that order of precedence, and validates the result. Unknown
// keys and bad values are errors that name the key.
package configs

import (
	_ "embed"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/slo"
)

//go:embed mmk.yaml
var defaultYAML []byte

// Config is mmk's whole configuration.
type Config struct {
	Log    LogConfig    `mapstructure:"log"`
	GPU    GPUConfig    `mapstructure:"gpu"`
	Server ServerConfig `mapstructure:"server"`
	// DataDir holds mmkd's job store, job directories, MPS daemons'
	// directories, kernel profiles and scheduler sockets; "" is
	// /var/lib/mmk for root, else ~/.local/state/mmk.
	DataDir     string            `mapstructure:"data_dir"`
	Jobs        JobsConfig        `mapstructure:"jobs"`
	MIG         MIGConfig         `mapstructure:"mig"`
	MPS         MPSConfig         `mapstructure:"mps"`
	KernelSched KernelSchedConfig `mapstructure:"kernelsched"`
	Predictor   PredictorConfig   `mapstructure:"predictor"`
	Placement   PlacementConfig   `mapstructure:"placement"`
	SLO         SLOConfig         `mapstructure:"slo"`
}

// SLOConfig configures the online jobs' latency targets and the
// controller that holds them (docs/slo.md). It needs kernel scheduling.
type SLOConfig struct {
	// Controller lets each instance's controller restrain the offline jobs
	// beside online ones as the targets need; off, requests are measured
	// and shown only.
	Controller bool `mapstructure:"controller"`
	// Default is the target of an online job that declares none ("" :
	// none).
	Default string `mapstructure:"default"`
	// Ladder are the restraints the controller climbs, cheapest first.
	Ladder []string `mapstructure:"ladder"`
	// Masks lets mmkd map each GPU's TPC mask slots at start (once per
	// GPU and driver, kept in the data directory), check that a mask
	// takes the SMs the map says, and then climb MaskLadder there instead
	// of Ladder (where Ladder names no mask rung itself). Off, or where
	// the map or the check fails, a GPU's controllers climb Ladder.
	Masks bool `mapstructure:"masks"`
	// MaskLadder is the ladder of a GPU whose masks are on: it masks
	// TPCs and holds no launch (a masked job's launches are not seen).
	MaskLadder []string `mapstructure:"mask_ladder"`
	// Window is how far back a service's requests are shown and its
	// load is taken; Calm how long a cheaper rung must be forecast to
	// hold every target before a step down (slo.Config.Calm).
	Window time.Duration `mapstructure:"window"`
	Calm   time.Duration `mapstructure:"calm"`
	// Aim is the share of each target's budget the controller aims for
	// (slo.Config.Aim): a rung holds a service when a window of its
	// requests is forecast to keep within Aim times the late requests its
	// target allows.
	Aim float64 `mapstructure:"aim"`
	// HookMarks lets an online job's hook mark where each request starts
	// (its launch callbacks stay on for it); off, only the latencies a
	// service reports itself are measured.
	HookMarks bool `mapstructure:"hook_marks"`
	// TPCMaps is a directory of TPC slot maps, one JSON file per GPU as
	// bench/gpu/tpcmap.py writes it (slo.TPCMap, matched by the GPU's
	// UUID inside): a tpcs=F rung then keeps the share F of that GPU's
	// TPCs, not its first slots, of which an H100 has ten holes ("": none).
	TPCMaps string `mapstructure:"tpc_maps"`
	// MaxStop, MaxStopShare and StopWindow are the progress floor of a
	// suspension (slo.StopBound): stopped at most MaxStop at a time
	// and MaxStopShare of any StopWindow.
	MaxStop      time.Duration `mapstructure:"max_stop"`
	MaxStopShare float64       `mapstructure:"max_stop_share"`
	StopWindow   time.Duration `mapstructure:"stop_window"`
	// RestrainOthers are the users whose online jobs' targets may mask
	// or suspend other users' offline jobs ("*": every user's); the
	// others' targets reach other users' jobs through priority and guard
	// only, and their own user's through every rung.
	RestrainOthers []string `mapstructure:"restrain_others"`
}

// StopBound is the suspension's progress floor (Validate checks it).
func (c SLOConfig) StopBound() slo.StopBound {
	return slo.StopBound{Max: c.MaxStop, Share: c.MaxStopShare, Window: c.StopWindow}
}

// Target is the default target, parsed (zero: none). Validate checks it.
func (c SLOConfig) Target() slo.Target {
	t, _ := slo.Parse(c.Default)
	return t
}

// MaskRungs is slo.mask_ladder, parsed (Validate checks it).
func (c SLOConfig) MaskRungs() slo.Ladder {
	l, _ := slo.ParseLadder(c.MaskLadder)
	return l
}

// ControllerConfig is the controller's configuration (Validate checks
// the ladder).
func (c SLOConfig) ControllerConfig() slo.Config {
	l, _ := slo.ParseLadder(c.Ladder)
	return slo.Config{Ladder: l, Window: c.Window, Calm: c.Calm, Aim: c.Aim}
}

// validate checks the default target, the ladder and the durations.
func (c SLOConfig) validate() error {
	if c.Default != "" {
		if _, err := slo.Parse(c.Default); err != nil {
			return &FieldError{Key: "slo.default", Value: c.Default, Reason: err.Error()}
		}
	}
	l, err := slo.ParseLadder(c.Ladder)
	if err == nil {
		err = l.Check()
	}
	if err != nil {
		return &FieldError{Key: "slo.ladder", Value: strings.Join(c.Ladder, ","), Reason: err.Error()}
	}
	if l.UsesTPCs() && slices.ContainsFunc(l, slo.Rung.Holds) {
		// A job whose TPCs mmk masks holds the driver's callbacks: its
		// hook sees none of its launches (docs/slo.md).
		return &FieldError{Key: "slo.ladder", Value: strings.Join(c.Ladder, ","),
			Reason: "TPC masks (tpcs=) and held launches (guard=, hold) do not mix: a masked job's launches cannot be seen, so not held"}
	}
	var ml slo.Ladder
	if len(c.MaskLadder) > 0 {
		ml, err = slo.ParseLadder(c.MaskLadder)
		if err == nil {
			err = ml.Check()
		}
	}
	switch {
	case err != nil:
		return &FieldError{Key: "slo.mask_ladder", Value: strings.Join(c.MaskLadder, ","), Reason: err.Error()}
	case c.Masks && !ml.UsesTPCs():
		return &FieldError{Key: "slo.mask_ladder", Value: strings.Join(c.MaskLadder, ","), Reason: "names no mask rung (tpcs=F), with slo.masks on"}
	case slices.ContainsFunc(ml, slo.Rung.Holds):
		return &FieldError{Key: "slo.mask_ladder", Value: strings.Join(c.MaskLadder, ","),
			Reason: "TPC masks (tpcs=) and held launches (guard=, hold) do not mix: a masked job's launches cannot be seen, so not held"}
	}
	if err := slo.CheckAim(c.Aim); err != nil {
		return &FieldError{Key: "slo.aim", Value: c.Aim, Reason: err.Error()}
	}
	if err := positive("slo.window", int64(c.Window)); err != nil {
		return err
	}
	if err := positive("slo.max_stop", int64(c.MaxStop)); err != nil {
		return err
	}
	if !(c.MaxStopShare > 0 && c.MaxStopShare < 1) {
		return &FieldError{Key: "slo.max_stop_share", Value: c.MaxStopShare, Reason: "must be above 0 and below 1 (a job is never stopped all the time)"}
	}
	for i, u := range c.RestrainOthers {
		if u == "" || len(u) > 64 || strings.ContainsAny(u, " \t\n:/,") || !utf8.ValidString(u) {
			return &FieldError{Key: fmt.Sprintf("slo.restrain_others[%d]", i), Value: u, Reason: `must be a user name, or "*" for every user`}
		}
	}
	if c.StopWindow < c.MaxStop {
		return &FieldError{Key: "slo.stop_window", Value: c.StopWindow, Reason: fmt.Sprintf("must be at least slo.max_stop (%v)", c.MaxStop)}
	}
	return positive("slo.calm", int64(c.Calm))
}

// JobsConfig sets the defaults and limits of jobs.
type JobsConfig struct {
	// DefaultMemoryMiB is the GPU memory of a job that gives none.
	DefaultMemoryMiB int64 `mapstructure:"default_memory_mib"`
	// StopGrace is the time between SIGTERM and SIGKILL when a job is
	// cancelled or moved.
	StopGrace time.Duration `mapstructure:"stop_grace"`
	// LogMaxBytes caps a job's log file; past it the log rotates once.
	LogMaxBytes int64 `mapstructure:"log_max_bytes"`
	// Retention is how long a finished job (record, events, log,
	// checkpoint) is kept; 0 keeps every job forever.
	Retention time.Duration `mapstructure:"retention"`
	// UsageInterval is how often the jobs' GPU use (memory, utilisation)
	// and the GPUs' health are read through NVML; 0 never.
	UsageInterval time.Duration `mapstructure:"usage_interval"`
	// AllowRoot lets jobs run as root: submitted by root over the
	// socket, or over TCP to an mmkd that runs as root. Off, they are
	// refused.
	AllowRoot bool `mapstructure:"allow_root"`
	// BackupEvery is how often the job store is copied, consistently,
	// beside itself (mmk.db.bak); 0: never.
	BackupEvery time.Duration `mapstructure:"backup_every"`
}

// MIGConfig says whether mmkd may change MIG layouts.
type MIGConfig struct {
	// Manage lets the placement loop create and destroy MIG instances on
	// GPUs whose MIG mode an operator enabled. Off by default: mmk then
	// places jobs in the instances that exist and never changes them.
	Manage bool `mapstructure:"manage"`
	// PartedFile is a mig-parted configuration file (version: v1,
	// mig-configs) and PartedConfig the configuration of it that mmkd
	// sets up at start on the GPUs it matches (with Manage; without, it
	// reports the GPUs that differ). "" for none.
	PartedFile   string `mapstructure:"parted_file"`
	PartedConfig string `mapstructure:"parted_config"`
}

// MPSConfig configures the MPS daemons, one per instance.
type MPSConfig struct {
	// Enabled is auto (with the nvml backend when the control binary is
	// found), true or false.
	Enabled string `mapstructure:"enabled"`
	// Control is nvidia-cuda-mps-control; "" looks it up on PATH.
	Control string `mapstructure:"control"`
	// PriorityShares lets offline jobs (MPS client priority 1) share an
	// instance with online ones at shares summing above 100 %: every job
	// at 100 %, only memory limiting who shares
	// (partitioner.Options.PriorityShares). Off: shares sum to at most
	// 100 % and jobs wait for share.
	PriorityShares bool `mapstructure:"priority_shares"`
	// MemoryLimit says which jobs' MPS clients get a device memory limit
	// (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): spec (those whose spec gives
	// their memory), all (the others at the default memory) or off. The
	// limit is the job's memory plus MemoryLimitMarginPct percent plus
	// MemoryLimitMarginMiB.
	MemoryLimit          string `mapstructure:"memory_limit"`
	MemoryLimitMarginPct int64  `mapstructure:"memory_limit_margin_pct"`
	MemoryLimitMarginMiB int64  `mapstructure:"memory_limit_margin_mib"`
}

// KernelSchedConfig configures kernel scheduling: a kernelsched server
// per instance and the hook in every job.
type KernelSchedConfig struct {
	// Enabled is auto (when the hook library is found), true or false.
	Enabled string `mapstructure:"enabled"`
	// Policy is the kernel scheduler's policy.
	Policy string `mapstructure:"policy"`
	// Hook is libmmkhook.so; "" looks next to the mmkd binary.
	Hook string `mapstructure:"hook"`
	// Cupti is the libcupti the hook loads; "" lets it search.
	Cupti string `mapstructure:"cupti"`
}

// PredictorConfig selects the placement's performance model.
type PredictorConfig struct {
	// Model is a model file from mmkctl predictor train; "" trains mmk's
	// default model (predictor.DefaultKind, gradient boosting) on the
	// built-in H200 dataset at start.
	Model string `mapstructure:"model"`
}

// PlacementConfig tunes where Algorithm 1 puts a job among the
// instances that can take it.
type PlacementConfig struct {
	// Spread puts each job into the least busy instance (each job counting
	// 1, an online job its measured busy share; for an online job under
	// priority shares, offline jobs below it not at all), the predicted
	// gain breaking ties (partitioner.Options.Spread); off, the
	// instance where the predicted total speed gains most (Algorithm 1 as
	// written). On by default: with every job at 100 % under MPS client
	// priority and no cap on jobs per instance, the predicted gain alone
	// piled jobs onto few GPUs in simulation (8 GPUs, 1200 jobs: mean JCT
	// 594 s against 279 s spread and 268 s for MPS with priority by hand,
	// docs/results/partition.md), where the predictor answers for more
	// co-runners than it was trained on. One GPU without MIG has one
	// instance, so it changes nothing there.
	Spread bool `mapstructure:"spread"`
	// SLOGuard places a job only where every online job with a latency
	// target on that instance keeps the predicted speed its target needs
	// (partitioner.Options.SLOGuard): a ratio target p=Rx needs
	// slo.PlacementHeadroom/R of its speed alone, an absolute bound the
	// same against its measured latency alone; other online jobs count at
	// their measured busy share, offline jobs below priority not at all.
	// Jobs without a target are placed as before. On by default: in
	// simulation it held the tight targets MPS with priority misses
	// (docs/results/partition.md, the map).
	SLOGuard bool `mapstructure:"slo_guard"`
	// SLOMaxWait is how long an online job waits for a place that holds
	// its own target before it goes where it fits, its need set aside
	// (the needs of jobs already placed still hold); 0: as long as it
	// takes. One minute by default: in simulation waiting as long as it
	// takes held a few more services at 1.4-1.5x the mean JCT of MPS with
	// priority by hand where load was high.
	SLOMaxWait time.Duration `mapstructure:"slo_max_wait"`
	// MoveAfter is how long an instance's latency controller must hold
	// its services only at its top rung (or not at all) before an offline
	// job beside them is moved to another GPU with room (restarted from
	// its checkpoint; node.MoveConfig); 0: never. Off by default: it is
	// tested on the fake backend, not yet measured on GPUs.
	MoveAfter time.Duration `mapstructure:"move_after"`
	// MoveMaxLost is the most a move may cost the moved job: its measured
	// restart cost (stop, start-up, work since its last checkpoint).
	MoveMaxLost time.Duration `mapstructure:"move_max_lost"`
	// ReshareAfter is how long an instance's latency controller must hold
	// every offline job there to a share of the TPCs (a mask rung) before
	// each is restarted with an MPS share no larger, its cost bounded by
	// MoveMaxLost (node.MoveConfig); 0: never. Off by default: tested on
	// the fake backend, not yet measured on GPUs.
	ReshareAfter time.Duration `mapstructure:"reshare_after"`
}

// LogConfig configures log/slog.
type LogConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// GPUConfig selects the GPU backend.
type GPUConfig struct {
	Backend     string     `mapstructure:"backend"`
	NVMLLibrary string     `mapstructure:"nvml_library"`
	Fake        FakeConfig `mapstructure:"fake"`
	// Devices are the GPUs mmk manages, by NVML index or UUID (an entry
	// may hold several, comma-separated); none: every GPU the node has
	// (partitioner.Devices). The others are left alone entirely.
	Devices []string `mapstructure:"devices"`
}

// FakeConfig describes the fake backend's GPUs.
type FakeConfig struct {
	Seed uint64            `mapstructure:"seed"`
	GPUs []fakegpu.GPUSpec `mapstructure:"gpus"`
}

// ServerConfig configures mmkd's HTTP server.
type ServerConfig struct {
	Listen string `mapstructure:"listen"`
	// Token is the bearer token every API call must carry; required when
	// Listen is not a loopback address.
	Token string `mapstructure:"token"`
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	// Socket is the Unix socket of the API: "" is DATA_DIR/mmkd.sock,
	// "none" serves no socket. Its callers are known by their user.
	Socket string `mapstructure:"socket"`
	// SocketGroup is the group that may connect to the socket (mode
	// 0660): a name or a gid; "" is mmkd's own group.
	SocketGroup string `mapstructure:"socket_group"`
	// AllowedHosts are the host names a TCP request may name in its
	// Host header besides IP addresses and localhost.
	AllowedHosts []string `mapstructure:"allowed_hosts"`
	// MaxConns caps the connections served at once over the socket and
	// TCP together (lowered to keep descriptors for jobs).
	MaxConns int `mapstructure:"max_conns"`
	// MaxStreams caps the live streams (/api/v1/stream) served at once.
	MaxStreams int `mapstructure:"max_streams"`
}

// FieldError is a bad configuration value; Key is its dotted key. Value
// is nil for a secret (server.token), which Error does not show.
type FieldError struct {
	Key    string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	if e.Value == nil {
		// A secret: the value is not shown.
		return fmt.Sprintf("config key %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("config key %s: %q %s", e.Key, fmt.Sprint(e.Value), e.Reason)
}

func oneOf(key, value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return &FieldError{Key: key, Value: value, Reason: "is not one of " + strings.Join(allowed, ", ")}
}

// Validate checks every value and returns the first bad one as a
// *FieldError.
func (c *Config) Validate() error {
	checks := []error{
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "text", "json"),
		oneOf("gpu.backend", c.GPU.Backend, "auto", "nvml", "fake"),
		validListen(c.Server.Listen),
		c.Server.validToken(),
		c.Server.longToken(),
		oneOf("mps.enabled", c.MPS.Enabled, "auto", "true", "false"),
		oneOf("kernelsched.enabled", c.KernelSched.Enabled, "auto", "true", "false"),
		oneOf("kernelsched.policy", c.KernelSched.Policy, kernelsched.Policies()...),
		positive("jobs.default_memory_mib", c.Jobs.DefaultMemoryMiB),
		positive("jobs.log_max_bytes", c.Jobs.LogMaxBytes),
		positive("server.max_body_bytes", c.Server.MaxBodyBytes),
		positive("jobs.stop_grace", int64(c.Jobs.StopGrace)),
		notNegative("jobs.retention", int64(c.Jobs.Retention)),
		notNegative("jobs.usage_interval", int64(c.Jobs.UsageInterval)),
		notNegative("placement.slo_max_wait", int64(c.Placement.SLOMaxWait)),
		notNegative("placement.move_after", int64(c.Placement.MoveAfter)),
		notNegative("placement.move_max_lost", int64(c.Placement.MoveMaxLost)),
		notNegative("placement.reshare_after", int64(c.Placement.ReshareAfter)),
		oneOf("mps.memory_limit", c.MPS.MemoryLimit, "spec", "all", "off"),
		notNegative("mps.memory_limit_margin_pct", c.MPS.MemoryLimitMarginPct),
		notNegative("mps.memory_limit_margin_mib", c.MPS.MemoryLimitMarginMiB),
		notNegative("jobs.backup_every", int64(c.Jobs.BackupEvery)),
		positive("server.max_conns", int64(c.Server.MaxConns)),
		positive("server.max_streams", int64(c.Server.MaxStreams)),
		c.SLO.validate(),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if err := c.MIG.validParted(); err != nil {
		return err
	}
	for i, g := range c.GPU.Fake.GPUs {
		key := fmt.Sprintf("gpu.fake.gpus[%d]", i)
		m, err := partitioner.LookupModel(g.Model)
		if err != nil {
			return &FieldError{Key: key + ".model", Value: g.Model, Reason: "is not a known model (" + strings.Join(partitioner.ModelKeys(), ", ") + ")"}
		}
		l, err := partitioner.ParseLayout(m, g.Layout)
		if err != nil {
			return &FieldError{Key: key + ".layout", Value: g.Layout, Reason: "is not a layout of " + m.Key + ": " + err.Error()}
		}
		if len(l.Instances) > 0 && !g.MIG {
			return &FieldError{Key: key + ".layout", Value: g.Layout, Reason: "needs mig: true"}
		}
	}
	return nil
}

func positive(key string, v int64) error {
	if v <= 0 {
		return &FieldError{Key: key, Value: v, Reason: "must be positive"}
	}
	return nil
}

func notNegative(key string, v int64) error {
	if v < 0 {
		return &FieldError{Key: key, Value: v, Reason: "must not be negative"}
	}
	return nil
}

// validToken refuses to serve beyond loopback without a token: anyone who
// reaches the port could run commands as mmkd's user.
func (s ServerConfig) validToken() error {
	host, _, err := net.SplitHostPort(s.Listen)
	if err != nil || s.Token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &FieldError{Key: "server.listen", Value: s.Listen,
		Reason: "is not a loopback address: set server.token (MMK_SERVER_TOKEN) so that requests must carry it"}
}

// MinTokenLen is the fewest characters a configured server.token may
// have.
const MinTokenLen = 16

// longToken refuses a configured token too short to resist guessing; the
// error gives its length, never the token.
func (s ServerConfig) longToken() error {
	n := utf8.RuneCountInString(s.Token)
	if n == 0 || n >= MinTokenLen {
		return nil
	}
	return &FieldError{Key: "server.token",
		Reason: fmt.Sprintf("(not shown) is %d characters long, fewer than %d: set a longer one (or none, and mmkd makes one)", n, MinTokenLen)}
}

func validListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		if n, err = strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port %d is out of range", n)
		}
	}
	if err != nil {
		return &FieldError{Key: "server.listen", Value: addr, Reason: "is not host:port: " + err.Error()}
	}
	return nil
}

// SlogLevel returns the configured level.
func (c LogConfig) SlogLevel() slog.Level {
	switch c.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
