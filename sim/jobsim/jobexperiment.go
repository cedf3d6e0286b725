package jobsim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/trace"
)

// Experiment runs several job-level policies on one job trace.
type Experiment struct {
	Workload string
	Jobs     []trace.SimJob
	Model    *partitioner.Model
	GPUs     int
	Policies []string
	Models   *Models
	// MIGReconfig is the MIG change time (0: DefaultMIGReconfig); the
	// checkpoint costs are the Models' table.
	MIGReconfig time.Duration
	MaxShare    int
	SLOFactor   float64
	// SLOHeadroom and SLOMaxWait are Config's.
	SLOHeadroom float64
	SLOMaxWait  time.Duration
	// OracleError is Config.OracleError.
	OracleError float64
	// Seed draws the online jobs' requests.
	Seed uint64
	// Progress, when set, is called with each policy's finished jobs.
	Progress func(policy string, done, total int)
	// OnPlan, when set, is given each plan of each policy (Config.OnPlan).
	OnPlan func(policy string, plan *partitioner.Plan)
}

// Run simulates each policy in turn, in the order given. The policies
// share a cache of the predictor's answers (one per client priority
// of offline jobs): they ask it the same questions.
func (e Experiment) Run() ([]*Result, error) {
	var out []*Result
	// One cache per client priority of offline jobs: the answers differ.
	caches := map[bool]*partitioner.Cache{}
	for _, p := range e.Policies {
		pol, err := ParsePolicy(p)
		if err != nil {
			return nil, fmt.Errorf("job sim: %w", err)
		}
		prio := pol.priority()
		if caches[prio] == nil {
			caches[prio] = partitioner.NewCache(withPriority(e.Models.Est, prio))
		}
		cfg := Config{
			Jobs: e.Jobs, Model: e.Model, GPUs: e.GPUs, Policy: p,
			Truth: e.Models.Truth, Est: caches[prio], Effects: e.Models.Effects,
			Costs:    Costs{MIGReconfig: e.MIGReconfig, Checkpoint: e.Models.Restart.Types},
			MaxShare: e.MaxShare, SLOFactor: e.SLOFactor, SLOHeadroom: e.SLOHeadroom, SLOMaxWait: e.SLOMaxWait, Seed: e.Seed, OracleError: e.OracleError,
		}
		if e.Progress != nil {
			cfg.Progress = func(done, total int) { e.Progress(p, done, total) }
		}
		if e.OnPlan != nil {
			cfg.OnPlan = func(plan *partitioner.Plan) { e.OnPlan(p, plan) }
		}
		r, err := Simulate(cfg)
		if err != nil {
			return nil, err
		}
		r.Workload = e.Workload
		out = append(out, r)
	}
	return out, nil
}

// WriteJCTCDF draws each result's CDF of JCT normalised to the job alone
// (MMK figure 7) as an SVG, the x axis in log scale.
func WriteJCTCDF(w io.Writer, title string, results []*Result) error {
	const width, height, left, right, top, bottom = 640.0, 400.0, 60.0, 150.0, 30.0, 45.0
	hi := 1.0
	for _, r := range results {
		if n := len(r.NormJCT); n > 0 {
			hi = max(hi, r.NormJCT[n-1])
		}
	}
	xmax := math.Ceil(math.Log10(hi*1.05) + 1e-9)
	x := func(v float64) float64 { return left + (width-left-right)*math.Log10(max(1, v))/max(1, xmax) }
	y := func(f float64) float64 { return height - bottom - (height-top-bottom)*f }
	colors := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, y(0), width-right, y(0), left, y(0), left, y(1))
	for d := 0.0; d <= xmax; d++ {
		v := math.Pow(10, d)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%gx</text>`+"\n", x(v), height-bottom+16, v)
	}
	for f := 0.0; f <= 1.0001; f += 0.25 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", left-6, y(f)+4, f)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">JCT / JCT alone (log)</text>`+"\n", (left+width-right)/2, height-8)
	for i, r := range results {
		c := colors[i%len(colors)]
		n := len(r.NormJCT)
		var pts strings.Builder
		for k, v := range r.NormJCT {
			fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f ", x(v), y(float64(k)/float64(n)), x(v), y(float64(k+1)/float64(n)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.TrimSpace(pts.String()))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			width-right+12, top+float64(i)*18, c, width-right+30, top+float64(i)*18+10, html.EscapeString(r.Policy))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write JCT CDF: %w", err)
	}
	return nil
}
