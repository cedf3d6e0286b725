// Package progress reports how far a long command has got. On a terminal
// it redraws one line in place (a carriage return before each); anywhere
// else (a log file, a pipe, a CI log) it writes plain lines: one when a
// piece of work is done, and in between at most one every Interval, so a
// log holds a few lines instead of one redrawn line a step.
//
// It stays under internal/, the bottom floor (layers_test.go), rather
// than beside a user: it imports nothing of mmk, and its users, mmkctl
// and the commands under bench/, share no folder below the module's root.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Interval is how often at most a Writer not on a terminal writes a line
// while work goes on.
const Interval = 30 * time.Second

// Writer writes progress to w. Its methods may be called from several
// goroutines.
type Writer struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	now      func() time.Time

	mu sync.Mutex
	// last is when the last plain line was written (off a terminal).
	last time.Time
	// open: a redrawn line is on the terminal, not yet ended.
	open bool
}

// New returns a Writer to w, which redraws its line in place only if w
// is a terminal.
func New(w io.Writer) *Writer {
	return newWriter(w, IsTerminal(w), Interval, time.Now)
}

func newWriter(w io.Writer, terminal bool, every time.Duration, now func() time.Time) *Writer {
	return &Writer{w: w, terminal: terminal, every: every, now: now, last: now()}
}

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Update reports done of total steps, text saying so. On a terminal it
// redraws the line, ended when done reaches total; elsewhere it writes
// text as a line when done reaches total, or when Interval has passed
// since its last line.
func (p *Writer) Update(done, total int, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	finished := done >= total
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s   ", text)
		p.open = !finished
		if finished {
			fmt.Fprintln(p.w)
		}
		return
	}
	if now := p.now(); finished || now.Sub(p.last) >= p.every {
		fmt.Fprintln(p.w, text)
		p.last = now
	}
}

// Updatef is Update with the text formatted.
func (p *Writer) Updatef(done, total int, format string, args ...any) {
	p.Update(done, total, fmt.Sprintf(format, args...))
}

// End ends a line left open on the terminal (work stopped before its
// last step); it writes nothing otherwise.
func (p *Writer) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}
