package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
)

// logsFlags are the flags of `mmkctl logs`.
type logsFlags struct {
	follow          bool
	tail, tailBytes int64
}

func newLogsCommand() *cobra.Command {
	f := &logsFlags{}
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "logs [-f] [--tail LINES] ID",
		Short: "Print a job's output",
		Long: "Prints the job's output (stdout and stderr) as mmkd keeps it. With -f, keeps\n" +
			"printing what the job writes until it ends. The output is the job's own bytes,\n" +
			"whatever -o says.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := server.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			if f.follow {
				q.Set("follow", "1")
			}
			if cmd.Flags().Changed("tail") && cmd.Flags().Changed("tail-bytes") {
				return fmt.Errorf("flags --tail and --tail-bytes: give one")
			}
			if cmd.Flags().Changed("tail") {
				if f.tail < 0 {
					return fmt.Errorf("flag --tail: %d is negative", f.tail)
				}
				q.Set("lines", strconv.FormatInt(f.tail, 10))
			}
			if cmd.Flags().Changed("tail-bytes") {
				if f.tailBytes < 0 {
					return fmt.Errorf("flag --tail-bytes: %d is negative", f.tailBytes)
				}
				q.Set("tail", strconv.FormatInt(f.tailBytes, 10))
			}
			// A job that has not started has no output yet: say so, on
			// stderr, rather than print nothing.
			var j jobs.Job
			if err := c.get(cmd.Context(), "/api/v1/jobs/"+url.PathEscape(args[0]), nil, &j); err != nil {
				return err
			}
			if j.State == jobs.Pending || j.State == jobs.Placed {
				note := fmt.Sprintf("job %s is %s: it has not started, so it has no output yet", j.ID, j.State)
				if why := stateReason(j); why != "" && why != "submitted" {
					note += " (" + why + ")"
				}
				if f.follow {
					note += "; following it until it starts and ends"
				}
				fmt.Fprintln(cmd.ErrOrStderr(), note)
				if !f.follow {
					return nil
				}
			}
			resp, err := c.request(cmd.Context(), http.MethodGet, "/api/v1/jobs/"+url.PathEscape(args[0])+"/logs", q, nil, nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(cmd.OutOrStdout(), resp.Body); err != nil {
				return fmt.Errorf("read the log from mmkd: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep printing the output until the job ends")
	cmd.Flags().Int64Var(&f.tail, "tail", 0, "print only the last N lines")
	cmd.Flags().Int64Var(&f.tailBytes, "tail-bytes", 0, "print only the last N bytes")
	server = addServerFlags(cmd)
	return cmd
}
