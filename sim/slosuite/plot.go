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

// WriteFrontier draws each summary as a point, the share of the segments
// some static setting held that it held (x) against its median speed
// against the best all-segment static setting (y): the controllers (sums)
// filled, the static settings (statics) hollow, one colour per split,
// the clairvoyant ceiling of each split (Outcome.Ceiling, at 100 %) a
// diamond, and the acceptance's corner (97 %, 1.15x) marked.
func WriteFrontier(w io.Writer, title string, sums, statics []Summary) error {
	const width, height, left, right, top, bottom = 760.0, 480.0, 60.0, 140.0, 30.0, 45.0
	all := append(slices.Clone(sums), statics...)
	xlo, ylo, yhi := 1.0, 0.5, 1.5
	ceilings := map[Split]float64{}
	for _, s := range sums {
		if _, ok := ceilings[s.Split]; !ok && !math.IsNaN(s.MedianCeiling()) {
			ceilings[s.Split] = s.MedianCeiling()
		}
	}
	for _, s := range all {
		xlo = min(xlo, s.HeldShare())
		if m := s.MedianRatio(); !math.IsNaN(m) {
			ylo, yhi = min(ylo, m), max(yhi, m)
		}
	}
	for _, c := range ceilings {
		yhi = max(yhi, c)
	}
	xlo = math.Floor(xlo*20) / 20
	ylo, yhi = math.Floor(ylo*10)/10, math.Ceil(yhi*10)/10
	x := func(v float64) float64 { return left + (width-left-right)*(v-xlo)/(1-xlo) }
	y := func(v float64) float64 { return height - bottom - (height-top-bottom)*(v-ylo)/(yhi-ylo) }
	colors := map[Split]string{Tune: "#4e79a7", HeldOut: "#e15759"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="12">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, y(ylo), width-right, y(ylo), left, y(ylo), left, y(yhi))
	for v := xlo; v <= 1.0001; v += 0.05 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f %%</text>`+"\n", x(v), height-bottom+16, 100*v)
	}
	for v := ylo; v <= yhi+1e-9; v += 0.1 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.1fx</text>`+"\n", left-6, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#59a14f" fill-opacity="0.12"/><text x="%.1f" y="%.1f" fill="#59a14f">asked</text>`+"\n",
		x(0.97), y(yhi), x(1)-x(0.97), y(1.15)-y(yhi), x(0.97)+3, y(yhi)+12)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">share of the segments a static setting held that it held</text>`+"\n", (left+width-right)/2, height-8)
	for i, s := range all {
		m := s.MedianRatio()
		if math.IsNaN(m) {
			continue
		}
		c := colors[s.Split]
		fill := c
		if i >= len(sums) {
			fill = "white"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s" stroke-width="1.5"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			x(s.HeldShare()), y(m), fill, c, x(s.HeldShare())+6, y(m)-4, html.EscapeString(s.Controller))
	}
	for _, split := range []Split{Tune, HeldOut} {
		c, ok := ceilings[split]
		if !ok {
			continue
		}
		cx, cy := x(1), y(c)
		fmt.Fprintf(&b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/><text x="%.1f" y="%.1f" text-anchor="end">clairvoyant %.2fx</text>`+"\n",
			cx, cy-6, cx+6, cy, cx, cy+6, cx-6, cy, colors[split], cx-8, cy-6, c)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">tune</text><text x="%.0f" y="%.0f" fill="%s">held-out</text><text x="%.0f" y="%.0f">filled: controllers; hollow: static settings</text>`+"\n",
		left+10, y(ylo)-10, colors[Tune], left+50, y(ylo)-10, colors[HeldOut], left+110, y(ylo)-10)
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("suite frontier: %w", err)
	}
	return nil
}
