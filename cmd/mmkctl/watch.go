package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// watchFlags are --watch and --interval of the commands that can keep
// showing what they show (jobs, job), as kubectl get --watch does.
type watchFlags struct {
	on       bool
	interval time.Duration
}

// add adds --watch (-w) and --interval to cmd.
func (f *watchFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.on, "watch", "w", false, "keep asking mmkd and print again whenever the answer changes, until interrupted")
	cmd.Flags().DurationVar(&f.interval, "interval", 2*time.Second, "with --watch, how often to ask mmkd")
}

// run shows once, or with --watch every interval until ctx ends (an
// interrupt: no error): JSON and YAML again whole when they changed, a
// table or text block only its lines that changed (a job's row whose
// state moved), as kubectl get --watch does (issue 53: the whole table
// came again every 2 s, its AGE column having moved).
func (f *watchFlags) run(ctx context.Context, p printer, show func(context.Context, printer) error) error {
	if !f.on {
		return show(ctx, p)
	}
	if f.interval <= 0 {
		return fmt.Errorf("flag --interval: %s is not positive", f.interval)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var last []byte
	var seen map[string]bool // a table's lines, spacing aside
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for first := true; ; first = false {
		var buf bytes.Buffer
		q := p
		q.w, q.watching = &buf, true
		if err := show(ctx, q); err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		switch {
		case !p.json:
			lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
			now := make(map[string]bool, len(lines))
			for i, l := range lines {
				key := strings.Join(strings.Fields(l), " ")
				now[key] = true
				if first || (i > 0 && !seen[key]) {
					fmt.Fprintln(p.w, l)
				}
			}
			seen = now
		case !bytes.Equal(buf.Bytes(), last):
			if !first && p.yaml {
				fmt.Fprintln(p.w, "---") // JSON: a stream of documents
			}
			if _, err := p.w.Write(buf.Bytes()); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			last = buf.Bytes()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
