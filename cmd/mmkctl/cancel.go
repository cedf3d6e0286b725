package main

import (
	"net/url"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
)

func newCancelCommand(a *app) *cobra.Command {
	var reason string
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job (SIGTERM, then SIGKILL after the grace period, if it runs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := server.client()
			if err != nil {
				return err
			}
			var body any
			if reason != "" {
				body = map[string]string{"reason": reason}
			}
			var j jobs.Job
			if _, err := c.post(cmd.Context(), "/api/v1/jobs/"+url.PathEscape(args[0])+"/cancel", body, nil, &j); err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(j)
			}
			return p.Table("", []string{"ID", "STATE", "NAME"}, [][]string{{j.ID, withReason(string(j.State), j.Reason), j.Spec.Name}})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded with the job's event")
	server = addServerFlags(cmd, a.flags)
	return cmd
}
