package slosuite

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// WritePlot draws, per summary, the CDF of the controller's trainer
// speed against the fastest static setting that held every segment
// (one line per split and controller; the x axis logarithmic from 0.25x
// to 4x, the asked 1.15x marked) as an SVG.
func WritePlot(w io.Writer, title string, sums []Summary) error {
	const width, height, left, right, top, bottom = 720.0, 420.0, 60.0, 260.0, 30.0, 45.0
	const lo, hi = 0.25, 4.0
	x := func(v float64) float64 {
		v = min(max(v, lo), hi)
		return left + (width-left-right)*(math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))
	}
	y := func(f float64) float64 { return height - bottom - (height-top-bottom)*f }
	colors := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f", "#edc948"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, y(0), width-right, y(0), left, y(0), left, y(1))
	for _, v := range []float64{0.25, 0.5, 1, 2, 4} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%gx</text>`+"\n", x(v), height-bottom+16, v)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#999" stroke-dasharray="4 3"/><text x="%.1f" y="%.0f" fill="#666">1.15x</text>`+"\n",
		x(1.15), y(0), x(1.15), y(1), x(1.15)+3, y(1)+12)
	for f := 0.0; f <= 1.0001; f += 0.25 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", left-6, y(f)+4, f)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">trainer speed / fastest static setting that held every segment (log)</text>`+"\n", (left+width-right)/2, height-8)
	for i, s := range sums {
		c := colors[i%len(colors)]
		v := slices.Sorted(slices.Values(s.Ratios))
		var pts strings.Builder
		for k, r := range v {
			fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f ", x(r), y(float64(k)/float64(len(v))), x(r), y(float64(k+1)/float64(len(v))))
		}
		dash := ""
		if s.Split == HeldOut {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.TrimSpace(pts.String()))
		label := fmt.Sprintf("%s, %s: held %.1f %%, median %.2fx", s.Controller, s.Split, 100*s.HeldShare(), s.MedianRatio())
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			width-right+12, top+float64(i)*18, c, width-right+30, top+float64(i)*18+10, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("suite plot: %w", err)
	}
	return nil
}
