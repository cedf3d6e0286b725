package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"time"
)

// timelineColors are distinguishable colours for up to eight tasks.
var timelineColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// TimelinePanel is one policy's kernels over a window.
type TimelinePanel struct {
	Policy string
	Spans  []Span
}

// WriteTimelineSVG draws, for each policy, one row per task with a bar
// for every kernel that ran in the window: which task's kernels ran when.
func WriteTimelineSVG(w io.Writer, tasks []string, win Window, panels []TimelinePanel) error {
	const (
		left, width, rowH, gap, top = 170.0, 1000.0, 18.0, 26.0, 30.0
	)
	span := float64(win.To - win.From)
	if span <= 0 {
		return fmt.Errorf("timeline: window %v..%v is empty", win.From, win.To)
	}
	panelH := float64(len(tasks))*rowH + gap
	height := top + float64(len(panels))*panelH + 30
	bw := bufio.NewWriter(w)
	x := func(t time.Duration) float64 {
		return left + width*float64(min(max(t, win.From), win.To)-win.From)/span
	}
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", left+width+20, height)
	fmt.Fprintf(bw, `<text x="%.0f" y="16" font-size="13">Kernels on the simulated GPU, %.2f-%.2f ms</text>`+"\n", left, ms(win.From), ms(win.To))
	for pi, p := range panels {
		y0 := top + float64(pi)*panelH
		fmt.Fprintf(bw, `<text x="4" y="%.1f" font-weight="bold">%s</text>`+"\n", y0+12, html.EscapeString(p.Policy))
		for ti, name := range tasks {
			y := y0 + float64(ti)*rowH
			fmt.Fprintf(bw, `<text x="70" y="%.1f">%s</text><rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="#f4f4f4"/>`+"\n",
				y+12, html.EscapeString(name), left, y+2, width, rowH-4)
		}
		for _, s := range p.Spans {
			if s.End <= win.From || s.Start >= win.To || s.Task >= len(tasks) {
				continue
			}
			y := y0 + float64(s.Task)*rowH
			x0, x1 := x(s.Start), x(s.End)
			fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.0f" fill="%s"/>`+"\n",
				x0, y+2, max(x1-x0, 0.3), rowH-4, timelineColors[s.Task%len(timelineColors)])
		}
	}
	axisY := top + float64(len(panels))*panelH
	for i := 0; i <= 10; i++ {
		t := win.From + time.Duration(float64(win.To-win.From)*float64(i)/10)
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" text-anchor="middle">%.2f ms</text>`+"\n",
			x(t), top, x(t), axisY, x(t), axisY+14, ms(t))
	}
	fmt.Fprintln(bw, `</svg>`)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	return nil
}
