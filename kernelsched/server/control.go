package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
)

// Command is one line of a running server's control channel
// (mmkctl kernelsched serve --control): a benchmark switches policies
// between measurement windows without restarting the jobs it measures.
//
//	policy NAME [tau=DUR] [slack=F] [inflight=DUR] [floor=F] [probe-every=N]
//	loud 0|1
//	stats
//	slo on|off
//	slo target NAME TARGET
//	slo aim F
//	slo status
//	tpcs F
type Command struct {
	// Op is "policy", "loud", "stats" or "slo".
	Op string
	// Loud: whether every hook reports every launch (Config.Loud).
	Loud bool
	// Policy and Config: the policy to switch to and its parameters
	// (zero fields: the defaults).
	Policy string
	Config kernelsched.Config
	// SLO is the latency controller's command: "on", "off", "target" (of
	// the tasks named Task), "aim" (Aim: slo.Config.Aim) or "status".
	SLO    string
	Task   string
	Target slo.Target
	Aim    float64
	// TPCs is the share of the TPCs offline tasks keep (tpcs F, 1: all);
	// PerRequest, only while an online request is in flight (tpcs F req:
	// SetRequestTPCs).
	TPCs       float64
	PerRequest bool
}

// ParseCommand parses one control line. Errors name the bad word.
func ParseCommand(line string) (Command, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Command{}, fmt.Errorf("empty command; want policy NAME [key=value ...], loud 0|1, stats or slo")
	}
	switch f[0] {
	case "slo":
		return parseSLOCommand(f[1:])
	case "tpcs":
		if len(f) != 2 && (len(f) != 3 || f[2] != "req") {
			return Command{}, fmt.Errorf("tpcs takes the share of the TPCs offline tasks keep, in (0, 1], and req to keep it only during online requests, got %q", strings.Join(f[1:], " "))
		}
		x, err := fraction(f[1], 1)
		if err != nil {
			return Command{}, fmt.Errorf("tpcs %s: %w", f[1], err)
		}
		return Command{Op: "tpcs", TPCs: x, PerRequest: len(f) == 3}, nil
	case "stats":
		if len(f) > 1 {
			return Command{}, fmt.Errorf("stats takes no argument, got %q", f[1])
		}
		return Command{Op: "stats"}, nil
	case "loud":
		if len(f) != 2 || (f[1] != "0" && f[1] != "1") {
			return Command{}, fmt.Errorf("loud takes 0 or 1, got %q", strings.Join(f[1:], " "))
		}
		return Command{Op: "loud", Loud: f[1] == "1"}, nil
	case "policy":
	default:
		return Command{}, fmt.Errorf("unknown command %q; want policy, loud, stats or slo", f[0])
	}
	if len(f) < 2 {
		return Command{}, fmt.Errorf("policy: missing the policy name")
	}
	c := Command{Op: "policy", Policy: f[1]}
	if _, err := kernelsched.NewPolicy(c.Policy); err != nil {
		return Command{}, err
	}
	g := &c.Config.Guard
	for _, kv := range f[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Command{}, fmt.Errorf("policy: %q is not key=value", kv)
		}
		var err error
		switch k {
		case "tau":
			g.Tau, err = time.ParseDuration(v)
		case "inflight":
			g.Inflight, err = positiveDuration(v)
		case "slack":
			g.Slack, err = fraction(v, 10)
		case "floor":
			g.Floor, err = fraction(v, 1)
		case "probe-every":
			g.ProbeEvery, err = strconv.Atoi(v)
			if err == nil && g.ProbeEvery < 2 {
				err = fmt.Errorf("must be at least 2")
			}
		default:
			return Command{}, fmt.Errorf("policy: unknown key %q; want tau, slack, inflight, floor or probe-every", k)
		}
		if err != nil {
			return Command{}, fmt.Errorf("policy: %s=%s: %w", k, v, err)
		}
	}
	return c, nil
}

// parseSLOCommand reads the words after "slo".
func parseSLOCommand(f []string) (Command, error) {
	c := Command{Op: "slo"}
	switch {
	case len(f) == 1 && (f[0] == "on" || f[0] == "off" || f[0] == "status"):
		c.SLO = f[0]
	case len(f) == 3 && f[0] == "target":
		t, err := slo.Parse(f[2])
		if err != nil {
			return Command{}, fmt.Errorf("slo target %s: %w", f[1], err)
		}
		c.SLO, c.Task, c.Target = "target", f[1], t
	case len(f) == 2 && f[0] == "aim":
		x, err := fraction(f[1], 1)
		if err != nil {
			return Command{}, fmt.Errorf("slo aim %s: %w", f[1], err)
		}
		c.SLO, c.Aim = "aim", x
	default:
		return Command{}, fmt.Errorf("slo takes on, off, status, target NAME TARGET or aim F, got %q", strings.Join(f, " "))
	}
	return c, nil
}

func positiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("must be positive")
	}
	return d, err
}

// fraction parses a number in (0, hi].
func fraction(v string, hi float64) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err == nil && !(x > 0 && x <= hi) {
		err = fmt.Errorf("must be in (0, %g]", hi)
	}
	return x, err
}

// Reply is the answer to a command, one JSON line.
type Reply struct {
	OK          bool               `json:"ok"`
	Error       string             `json:"error,omitempty"`
	Policy      string             `json:"policy"`
	Counters    *Counters          `json:"counters,omitempty"`
	PolicyStats map[string]float64 `json:"policy_stats,omitempty"`
	// SLO is the latency controller's state (stats, slo status).
	SLO *SLOView `json:"slo,omitempty"`
}

// Do runs one control line against the server and returns the JSON reply.
func (s *Server) Do(ctx context.Context, line string) []byte {
	r := Reply{OK: true}
	c, err := ParseCommand(line)
	switch {
	case err != nil:
	case c.Op == "policy":
		err = s.SetPolicy(ctx, c.Policy, c.Config)
	case c.Op == "loud":
		err = s.SetLoud(ctx, c.Loud)
	case c.Op == "slo" && (c.SLO == "on" || c.SLO == "off"):
		err = s.SetSLOActive(ctx, c.SLO == "on")
	case c.Op == "slo" && c.SLO == "target":
		err = s.SetTarget(c.Task, c.Target)
	case c.Op == "slo" && c.SLO == "aim":
		err = s.SetAim(c.Aim)
	case c.Op == "tpcs" && c.PerRequest:
		s.SetRequestTPCs(c.TPCs)
	case c.Op == "tpcs":
		s.SetTPCs(c.TPCs)
	case c.Op == "slo" && s.slo == nil:
		err = fmt.Errorf("slo: the server has no latency controller")
	}
	if err != nil {
		r.OK, r.Error = false, err.Error()
	}
	r.Policy = s.Policy()
	if err == nil && c.Op == "stats" {
		cs := s.Counters()
		r.Counters, r.PolicyStats = &cs, s.PolicyStats()
	}
	if err == nil && s.slo != nil && (c.Op == "stats" || c.Op == "slo") {
		v := s.SLO(false)
		r.SLO = &v
	}
	b, _ := json.Marshal(r) // a struct of plain fields always marshals
	return b
}
