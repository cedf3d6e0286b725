package predictor

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteProtocolSVG draws the protocol's result as an SVG bar chart: per
// model, its mean relative error on the configuration-disjoint splits
// (with the splits' min-max as a whisker) and, where it was run, on each
// job type left out; the noise floor, what a perfect model scores, as a
// dashed line. Each bar is labelled with its value.
func WriteProtocolSVG(w io.Writer, title string, res *ProtocolResult) error {
	const height, left, right, top, bottom, group, bar = 360.0, 60.0, 20.0, 50.0, 45.0, 90.0, 30.0
	width := max(480, left+right+group*float64(len(res.Models)))
	hi := res.Floor.RelError
	for _, m := range res.Models {
		hi = max(hi, m.ConfigsMax, m.ConfigsMean, m.TypeOutMean)
	}
	ymax := niceCeil(hi * 1.1)
	y := func(v float64) float64 { return height - bottom - (height-top-bottom)*v/ymax }
	colors := [2]string{"#4e79a7", "#f28e2b"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18">%s</text>`+"\n", left, html.EscapeString(title))
	// Legend under the title.
	for i, name := range []string{"configuration-disjoint splits", "each job type left out"} {
		x := left + float64(i)*200
		fmt.Fprintf(&b, `<rect x="%.0f" y="28" width="12" height="12" fill="%s"/><text x="%.0f" y="38">%s</text>`+"\n", x, colors[i], x+16, name)
	}
	// Axes, ticks in percent and the axis' name: the metric.
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, y(0), width-right, y(0), left, y(0), left, y(ymax))
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, pct(v))
	}
	fmt.Fprintf(&b, `<text transform="translate(14 %.0f) rotate(-90)" text-anchor="middle">mean relative error |predicted - measured| / measured</text>`+"\n", (top+height-bottom)/2)
	for i, m := range res.Models {
		x0 := left + group*float64(i) + (group-2*bar)/2
		bars := []float64{m.ConfigsMean}
		if len(m.TypeOut) > 0 {
			bars = append(bars, m.TypeOutMean)
		}
		for k, v := range bars {
			x := x0 + bar*float64(k)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.0f" height="%.1f" fill="%s"/>`+"\n", x, y(v), bar-2, y(0)-y(v), colors[k])
			ly := y(v)
			if k == 0 {
				ly = min(ly, y(m.ConfigsMax)) // above the whisker
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x+bar/2-1, ly-4, pct(v))
		}
		if m.ConfigsMax > m.ConfigsMin {
			cx := x0 + bar/2 - 1
			fmt.Fprintf(&b, `<path class="whisker" d="M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8" stroke="black" fill="none"/>`+"\n",
				cx, y(m.ConfigsMin), y(m.ConfigsMax), cx-4, y(m.ConfigsMin), cx-4, y(m.ConfigsMax))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x0+bar, height-bottom+16, html.EscapeString(m.Model))
	}
	if res.Floor.Samples > 0 {
		fy := y(res.Floor.RelError)
		fmt.Fprintf(&b, `<line class="floor" x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#e15759" stroke-dasharray="6 4"/>`+"\n", left, fy, width-right, fy)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#e15759">noise floor %s</text>`+"\n", width-right, fy-4, pct(res.Floor.RelError))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write the comparison's plot: %w", err)
	}
	return nil
}

// pct formats a fraction as a percentage with one decimal.
func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten (at least
// 0.01: 1 %), so that the axis' quarters are round numbers.
func niceCeil(v float64) float64 {
	if !(v > 0.01) {
		return 0.01
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
