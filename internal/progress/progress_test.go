package progress

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestUpdate: off a terminal, plain lines (the last step, then one an
// interval); on it, one line redrawn with carriage returns.
func TestUpdate(t *testing.T) {
	type step struct {
		after       time.Duration // since the step before
		done, total int
	}
	tests := []struct {
		name     string
		terminal bool
		steps    []step
		want     string
	}{
		{"quick work: the last line only", false,
			[]step{{0, 1, 3}, {time.Second, 2, 3}, {time.Second, 3, 3}},
			"3/3\n"},
		{"slow work: a line an interval", false,
			[]step{{10 * time.Second, 1, 4}, {25 * time.Second, 2, 4}, {10 * time.Second, 3, 4}, {40 * time.Second, 4, 4}},
			"2/4\n4/4\n"},
		{"two runs of work, each its last line", false,
			[]step{{0, 1, 2}, {0, 2, 2}, {0, 1, 2}, {0, 2, 2}},
			"2/2\n2/2\n"},
		{"terminal", true,
			[]step{{0, 1, 2}, {0, 2, 2}},
			"\r1/2   \r2/2   \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			clock := time.Unix(0, 0)
			p := newWriter(&b, tt.terminal, 30*time.Second, func() time.Time { return clock })
			for _, s := range tt.steps {
				clock = clock.Add(s.after)
				p.Updatef(s.done, s.total, "%d/%d", s.done, s.total)
			}
			p.End()
			if b.String() != tt.want {
				t.Errorf("wrote %q, want %q", b.String(), tt.want)
			}
		})
	}
}

// TestNewOffTerminal: a buffer and a file are not terminals; New writes
// no carriage return to them.
func TestNewOffTerminal(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	for _, w := range []interface {
		Write([]byte) (int, error)
	}{&b, f} {
		if IsTerminal(w) {
			t.Errorf("%T is a terminal", w)
		}
		p := New(w)
		for i := 1; i <= 100; i++ {
			p.Update(i, 100, fmt.Sprintf("%d/100", i))
		}
		p.End()
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{b.String(), string(got)} {
		if s != "100/100\n" || strings.Contains(s, "\r") {
			t.Errorf("wrote %q, want %q", s, "100/100\n")
		}
	}
}

// TestEndClosesAnOpenLine: work stopped early on a terminal leaves its
// line ended.
func TestEndClosesAnOpenLine(t *testing.T) {
	var b bytes.Buffer
	p := newWriter(&b, true, Interval, time.Now)
	p.Update(1, 3, "1/3")
	p.End()
	p.End()
	if b.String() != "\r1/3   \n" {
		t.Errorf("wrote %q", b.String())
	}
}
