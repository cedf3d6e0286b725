package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// Command is one line of a running server's control channel
// (mmkctl kernelsched serve --control): a benchmark switches policies
// between measurement windows without restarting the jobs it measures.
//
//	policy NAME [tau=DUR] [slack=F] [inflight=DUR] [floor=F] [probe-every=N]
//	loud 0|1
//	stats
type Command struct {
	// Op is "policy", "loud" or "stats".
	Op string
	// Loud: whether every hook reports every launch (Config.Loud).
	Loud bool
	// Policy and Config: the policy to switch to and its parameters
	// (zero fields: the defaults).
	Policy string
	Config kernelsched.Config
}

// ParseCommand parses one control line. Errors name the bad word.
func ParseCommand(line string) (Command, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Command{}, fmt.Errorf("empty command; want policy NAME [key=value ...], loud 0|1 or stats")
	}
	switch f[0] {
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
		return Command{}, fmt.Errorf("unknown command %q; want policy, loud or stats", f[0])
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
	}
	if err != nil {
		r.OK, r.Error = false, err.Error()
	}
	r.Policy = s.Policy()
	if err == nil && c.Op == "stats" {
		cs := s.Counters()
		r.Counters, r.PolicyStats = &cs, s.PolicyStats()
	}
	b, _ := json.Marshal(r) // a struct of plain fields always marshals
	return b
}
