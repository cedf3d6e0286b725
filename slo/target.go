package slo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Target is an online job's latency objective: Percentile percent of its
// requests take at most the bound. The bound is either absolute (Bound)
// or Ratio times the job's latency at that percentile alone, which mmk
// measures; exactly one of them is set.
type Target struct {
	// Percentile is in (0, 100): 99 for p99, 99.9 for p99.9.
	Percentile float64
	// Bound is the absolute bound; 0 when Ratio is set.
	Bound time.Duration
	// Ratio is the bound as a multiple of the latency alone; 0 when Bound
	// is set.
	Ratio float64
}

// Limits of a target.
const (
	MinPercentile = 1
	MaxPercentile = 99.99
	// MinBound is the shortest absolute bound taken: below it a request
	// is shorter than the launch of its first kernel, and p99=1ns would
	// keep the controller on its top rung for nothing.
	MinBound = 100 * time.Microsecond
	// MaxBound is the longest absolute bound taken: a request an hour long
	// is no latency objective.
	MaxBound = time.Hour
	// MaxRatio is the largest multiple of the latency alone taken.
	MaxRatio = 1000
)

// Error is a target that does not parse; it names the part at fault.
type Error struct {
	Text, Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("latency target %q: %s", clip(e.Text), e.Reason) }

// maxQuoted is the most bytes of a bad value an error quotes.
const maxQuoted = 100

// clip is s cut to maxQuoted bytes (on a rune's start), marked "..."
// where cut: an error names the bad value, not 5,000 bytes of it.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := maxQuoted - 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// decimal reports a plain decimal number: digits, then at most one
// point and digits ("99", "99.9", "1.5"); not "+99", "0x1.8cp6", "1e2",
// "Inf" or "1_0", which strconv.ParseFloat also takes.
func decimal(s string) bool {
	whole, frac, hasFrac := strings.Cut(s, ".")
	digits := func(d string) bool {
		return d != "" && strings.IndexFunc(d, func(r rune) bool { return r < '0' || r > '9' }) < 0
	}
	return digits(whole) && (!hasFrac || digits(frac))
}

// Parse reads a target's text form: "p<percentile>=<bound>", the bound a
// duration with its unit (25ms, 1.5s, 800us) or a ratio to the latency
// alone (1.5x): "p99=25ms", "p99.9=2x", "p50=3ms".
func Parse(s string) (Target, error) {
	bad := func(format string, a ...any) (Target, error) {
		return Target{}, &Error{Text: s, Reason: fmt.Sprintf(format, a...)}
	}
	lhs, rhs, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return bad("want p<percentile>=<bound>, such as p99=25ms or p99=1.5x")
	}
	lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
	if len(lhs) < 2 || (lhs[0] != 'p' && lhs[0] != 'P') {
		return bad("the percentile %q must be written p<number>, such as p99", clip(lhs))
	}
	pct, err := strconv.ParseFloat(lhs[1:], 64)
	if err != nil || !decimal(lhs[1:]) || pct < MinPercentile || pct > MaxPercentile {
		return bad("unknown percentile %q: want p%g to p%g, such as p50, p99 or p99.9", clip(lhs), float64(MinPercentile), MaxPercentile)
	}
	t := Target{Percentile: pct}
	if rhs == "" {
		return bad("no bound after '='")
	}
	if r, ok := strings.CutSuffix(rhs, "x"); ok {
		x, err := strconv.ParseFloat(r, 64)
		switch {
		case !decimal(r):
			return bad("the ratio %q is not a number followed by x, such as 1.5x", clip(rhs))
		case x < 1:
			return bad("the ratio %s is below 1x: no job is faster than alone for long", clip(rhs))
		case err != nil || x > MaxRatio: // err: out of float64's range
			return bad("the ratio %s is above %dx", clip(rhs), MaxRatio)
		}
		t.Ratio = x
		return t, nil
	}
	if decimal(rhs) {
		eg := rhs
		if len(eg) > 8 {
			eg = "25"
		}
		return bad("the bound %q has no unit: write a duration such as %sms or a ratio such as %sx", clip(rhs), eg, eg)
	}
	d, err := time.ParseDuration(rhs)
	switch {
	case err != nil || rhs[0] == '+':
		return bad("the bound %q is neither a duration (25ms, 1.5s) nor a ratio (1.5x)", clip(rhs))
	case d <= 0:
		return bad("the bound %s must be positive", clip(rhs))
	case d < MinBound:
		return bad("the bound %s is shorter than %v: no request is that short", clip(rhs), MinBound)
	case d > MaxBound:
		return bad("the bound %s is longer than %v", clip(rhs), MaxBound)
	}
	t.Bound = d
	return t, nil
}

// MustParse is Parse for literals known to be good (tests, defaults); it
// panics on a bad one.
func MustParse(s string) Target {
	t, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

// IsZero reports the zero Target: no objective.
func (t Target) IsZero() bool { return t == Target{} }

// String is the target's text form, which Parse reads back.
func (t Target) String() string {
	if t.IsZero() {
		return ""
	}
	p := "p" + strconv.FormatFloat(t.Percentile, 'f', -1, 64)
	if t.Ratio != 0 {
		return p + "=" + strconv.FormatFloat(t.Ratio, 'f', -1, 64) + "x"
	}
	return p + "=" + t.Bound.String()
}

// MarshalText writes the text form (JSON: a string, "p99=25ms").
func (t Target) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the text form; an empty text is no objective.
func (t *Target) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = Target{}
		return nil
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Resolve is the bound in force given the job's latency alone at the
// target's percentile (0: not measured yet). A ratio target without an
// alone latency has no bound yet (false).
func (t Target) Resolve(alone time.Duration) (time.Duration, bool) {
	switch {
	case t.IsZero():
		return 0, false
	case t.Ratio == 0:
		return t.Bound, true
	case alone <= 0:
		return 0, false
	}
	return time.Duration(float64(alone) * t.Ratio), true
}

// PlacementHeadroom is the slowdown a placement leaves an online job
// room for beyond what its target allows, for what the placement does
// not count: the memory interference of offline jobs that MPS client
// priority keeps off its SMs. Next to trainers at priority 1 on an H100,
// online jobs measured 1.09x and 1.10x their p99 alone
// (docs/results/mmkd-e2e-h100.md).
const PlacementHeadroom = 1.1

// Need is the least speed, relative to alone, at which a job whose
// latency alone at the target's percentile is alone (0: not measured)
// keeps the target, with PlacementHeadroom to spare: PlacementHeadroom
// over the ratio, or times alone over the bound; 0 where it cannot be
// known (an absolute bound before the job's latency alone is measured).
func (t Target) Need(alone time.Duration) float64 {
	switch {
	case t.IsZero():
		return 0
	case t.Ratio > 0:
		return PlacementHeadroom / t.Ratio
	case alone > 0 && t.Bound > 0:
		return PlacementHeadroom * float64(alone) / float64(t.Bound)
	}
	return 0
}

// Budget is the fraction of requests that may exceed the bound: 0.01 for
// p99.
func (t Target) Budget() float64 { return 1 - t.Percentile/100 }
