package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// run shows once, or with --watch every interval, printing the output
// again only when it changed, until ctx ends (an interrupt: no error).
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
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for first := true; ; first = false {
		var buf bytes.Buffer
		q := p
		q.w = &buf
		if err := show(ctx, q); err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if !bytes.Equal(buf.Bytes(), last) {
			switch {
			case first || (p.json && !p.yaml): // JSON: a stream of documents
			case p.yaml:
				fmt.Fprintln(p.w, "---")
			default:
				fmt.Fprintln(p.w)
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
