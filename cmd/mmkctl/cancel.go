package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
)

// cancelFlags are the flags of `mmkctl cancel`.
type cancelFlags struct {
	reason, state, name string
	all                 bool
}

func newCancelCommand(a *app) *cobra.Command {
	f := &cancelFlags{}
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "cancel [ID...] [--name NAME] [--state STATES | --all]",
		Short: "Cancel jobs (SIGTERM, then SIGKILL after the grace period, if they run)",
		Long: "Cancels the jobs named by id, the jobs of name --name that have not ended (in\n" +
			"the states --state names, if given), those in the states --state names, or with\n" +
			"--all every job that has not ended. A job that already ended is noted on stderr\n" +
			"and left as it is: cancelling is idempotent.",
		Example: "  mmkctl cancel 06dqsacch77g64h3 06dqsacch6872r5x\n" +
			"  mmkctl cancel --name bert-serve\n" +
			"  mmkctl cancel --state pending --reason 'queue cleared'\n" +
			"  mmkctl cancel --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (f.all || f.state != "" || f.name != "") {
				return errors.New("give job ids, or --name, --state or --all, not both")
			}
			if len(args) == 0 && !f.all && f.state == "" && f.name == "" {
				return errors.New("give job ids, --name, --state or --all")
			}
			if f.all && (f.state != "" || f.name != "") {
				return errors.New("give --name and --state, or --all, not both")
			}
			c, err := server.client()
			if err != nil {
				return err
			}
			ids := args
			if len(ids) == 0 {
				q := url.Values{}
				q.Set("state", "pending,placed,running,restarting")
				if f.state != "" {
					q.Set("state", f.state)
				}
				if f.name != "" {
					q.Set("name", f.name)
				}
				list, err := c.listJobs(cmd.Context(), q, 0)
				if err != nil {
					return fmt.Errorf("list the jobs to cancel: %w", err)
				}
				for _, j := range list {
					// The API's name filter matches a part of the name;
					// cancel takes the name whole.
					if f.name == "" || j.Spec.Name == f.name {
						ids = append(ids, j.ID)
					}
				}
				if f.name != "" && len(ids) == 0 {
					return fmt.Errorf("no job named %q has not ended", f.name)
				}
			}
			var body any
			if f.reason != "" {
				body = map[string]string{"reason": f.reason}
			}
			p := a.printer(cmd)
			stderr := cmd.ErrOrStderr()
			var done []jobs.Job
			var failed []string
			var lastErr error
			for _, id := range ids {
				var j jobs.Job
				_, err := c.post(cmd.Context(), "/api/v1/jobs/"+url.PathEscape(id)+"/cancel", body, nil, &j)
				var se *serverError
				if errors.As(err, &se) && se.Status == http.StatusConflict {
					// Ended already: nothing to cancel.
					if err := c.get(cmd.Context(), "/api/v1/jobs/"+url.PathEscape(id), nil, &j); err == nil && j.State.Terminal() {
						fmt.Fprintf(stderr, "job %s already ended (%s)\n", id, j.State)
						continue
					}
				}
				if err != nil {
					if len(ids) > 1 {
						fmt.Fprintf(stderr, "cancel %s: %v\n", id, err)
					}
					failed, lastErr = append(failed, id), err
					continue
				}
				done = append(done, j)
			}
			if p.names {
				p.namesOf(done)
			} else if p.json && len(args) == 1 && len(done) == 1 {
				// One job named: its object, as before several could be.
				if err := p.JSON(done[0]); err != nil {
					return err
				}
			} else if p.json {
				if done == nil {
					done = []jobs.Job{}
				}
				if err := p.JSON(done); err != nil {
					return err
				}
			} else if len(done) > 0 {
				rows := make([][]string, len(done))
				for i, j := range done {
					rows[i] = []string{j.ID, withReason(string(j.State), j.Reason), j.Spec.Name}
				}
				if err := p.Table("", []string{"ID", "STATE", "NAME"}, rows); err != nil {
					return err
				}
			} else if len(failed) == 0 && len(args) == 0 {
				p.Line("no jobs to cancel")
			}
			if len(ids) == 1 && lastErr != nil {
				return lastErr
			}
			if len(failed) > 0 {
				return fmt.Errorf("could not cancel %d of %d jobs: %s", len(failed), len(ids), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.reason, "reason", "", "why, recorded with each job's event")
	fl.StringVar(&f.state, "state", "", "cancel the jobs in these states, comma-separated (pending, placed, running, restarting)")
	fl.BoolVar(&f.all, "all", false, "cancel every job that has not ended")
	fl.StringVar(&f.name, "name", "", "cancel the jobs of this name (the whole name) that have not ended")
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}
