package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// jobsFlags are the flags of `mmkctl jobs`.
type jobsFlags struct {
	state, kind, name, owner string
	limit                    int
	watch                    watchFlags
}

func newJobsCommand(a *app) *cobra.Command {
	f := &jobsFlags{}
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List mmkd's jobs, newest first",
		Long: "List mmkd's jobs, newest first. -o wide adds each running job's GPU use as NVML\n" +
			"last reported it: the memory of its processes on its device with the most they\n" +
			"held and its limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), and the percent of time\n" +
			"its kernels ran (SM) and its memory was used (MEM), which NVML does not give on\n" +
			"MIG instances or to MPS clients (-).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := server.client()
			if err != nil {
				return err
			}
			show := func(ctx context.Context, p printer) error {
				q := url.Values{}
				set := func(k, v string) {
					if v != "" {
						q.Set(k, v)
					}
				}
				set("state", f.state)
				set("type", f.kind)
				set("name", f.name)
				set("owner", f.owner)
				list, err := c.listJobs(ctx, q, f.limit)
				if err != nil {
					return err
				}
				if p.json {
					return p.JSON(list)
				}
				if p.names {
					p.namesOf(list)
					return nil
				}
				var w *wideInfo // the wide table's
				if p.wide {
					if w, err = readWide(ctx, c); err != nil {
						return err
					}
				}
				return printJobs(p, list, w, time.Now())
			}
			return f.watch.run(cmd.Context(), a.printer(cmd), show)
		},
	}
	fl := cmd.Flags()
	f.watch.add(cmd)
	fl.StringVar(&f.state, "state", "", "only jobs in these states, comma-separated (pending, placed, running, restarting, succeeded, failed, cancelled)")
	fl.StringVar(&f.kind, "type", "", "only online or offline jobs")
	fl.StringVar(&f.name, "name", "", "only jobs whose name contains this")
	fl.StringVar(&f.owner, "owner", "", "only the jobs of this user (a name or a uid)")
	fl.IntVar(&f.limit, "limit", 0, "at most this many, the newest (0: all, read page by page)")
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

// listPage is the most jobs asked for in one request (mmkd's largest
// page).
const listPage = 5000

// listJobs reads the jobs the query selects, newest first: at most limit
// (0: all), page by page (mmkd answers at most listPage at once and links
// to the next page, older jobs).
func (c *client) listJobs(ctx context.Context, q url.Values, limit int) ([]jobs.Job, error) {
	var all []jobs.Job
	for {
		want := listPage
		if limit > 0 {
			want = min(want, limit-len(all))
		}
		q.Set("limit", strconv.Itoa(want))
		var page []jobs.Job
		if err := c.get(ctx, "/api/v1/jobs", q, &page); err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < want || (limit > 0 && len(all) >= limit) {
			return all, nil
		}
		q.Set("before", page[len(page)-1].ID)
	}
}

// printJobs writes jobs as a table; with w (the wide table, -o wide)
// each job's GPU use, an online job's latency against its target, and
// the reason for its state too.
func printJobs(p printer, list []jobs.Job, w *wideInfo, now time.Time) error {
	if len(list) == 0 {
		p.Line("no jobs")
		return nil
	}
	wide := w != nil
	head := []string{"ID", "NAME", "TYPE", "STATE", "PRIO", "MEMORY"}
	if wide {
		head = append(head, usageHeader...)
		head = append(head, sloHeader...)
	}
	ageHead := "AGE"
	if p.watching {
		ageHead = "CREATED"
	}
	head = append(head, "PLACEMENT", ageHead)
	if wide {
		head = append(head, "REASON")
	}
	rows := make([][]string, len(list))
	for i, j := range list {
		state := string(j.State)
		if j.Restraint != nil {
			state += " (" + j.Restraint.State + ")"
		}
		row := []string{j.ID, j.Spec.Name, string(j.Spec.Kind), state, strconv.Itoa(j.Priority), mib(j.MemoryMiB)}
		if wide {
			row = append(row, usageCells(j, w.usage)...)
			row = append(row, sloCells(j, w.slo)...)
		}
		when := age(now, j.CreatedAt)
		if p.watching {
			when = j.CreatedAt.Local().Format("15:04:05")
		}
		row = append(row, placement(j.Placement), when)
		if wide {
			row = append(row, stateReason(j))
		}
		rows[i] = row
	}
	return p.Table("", head, rows)
}

// stateReason is why a job is in its state: what holds a waiting job,
// else the reason of its last transition.
func stateReason(j jobs.Job) string {
	if j.Wait != nil && j.State == jobs.Pending {
		return j.Wait.Reason
	}
	if j.Restraint != nil {
		return restraintText(*j.Restraint)
	}
	return j.Reason
}

// restraintText says what restrains a job, for whom and why: "suspended
// for job X: priority -> suspend: ...".
func restraintText(r jobs.Restraint) string {
	s := r.How
	if len(r.For) > 0 {
		s += " for job " + strings.Join(r.For, ", job ")
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// placement is where a job runs, by the instance's name with its
// profile, and its MPS share where MPS runs: "gpu0/gi1 (4g.40gb) MPS
// 60%", "gpu2 (whole GPU)".
func placement(pl *jobs.Placement) string {
	if pl == nil {
		return "-"
	}
	name := pl.InstanceName
	if name == "" { // a record from before names
		name = pl.InstanceKey
	}
	profile := pl.Profile
	if profile == "" {
		profile = "whole GPU"
	}
	s := name + " (" + profile + ")"
	if pl.MPSPercent > 0 {
		s += fmt.Sprintf(" MPS %d%%", pl.MPSPercent)
	}
	return s
}

// age is how long ago t was, coarsely.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// jobWithEvents is `mmkctl job -o json`: the job object with its events
// and, for an online job, its latency against its target.
type jobWithEvents struct {
	jobs.Job
	Events []jobs.Event     `json:"events"`
	SLO    *node.JobSLOView `json:"slo,omitempty"`
}

func newJobCommand(a *app) *cobra.Command {
	var server *serverFlags
	var watch watchFlags
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Show one job of mmkd and its events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := server.client()
			if err != nil {
				return err
			}
			path := "/api/v1/jobs/" + url.PathEscape(args[0])
			show := func(ctx context.Context, p printer) error {
				var out jobWithEvents
				if err := c.get(ctx, path, nil, &out.Job); err != nil {
					return err
				}
				if err := c.get(ctx, path+"/events", nil, &out.Events); err != nil {
					return err
				}
				if out.Online() {
					var v node.JobSLOView
					if err := getOptional(ctx, c, path+"/slo", &v); err != nil {
						return err
					}
					if v.SLO != nil {
						out.SLO = &v
					}
				}
				if p.json {
					return p.JSON(out)
				}
				if p.names {
					p.namesOf([]jobs.Job{out.Job})
					return nil
				}
				return printJob(p, out)
			}
			return watch.run(cmd.Context(), a.printer(cmd), show)
		},
	}
	watch.add(cmd)
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

func printJob(p printer, j jobWithEvents) error {
	rows := [][]string{
		{"ID:", j.ID},
		{"Name:", j.Spec.Name},
		{"Type:", string(j.Spec.Kind)},
		{"State:", withReason(string(j.State), j.Reason)},
	}
	if r := j.Restraint; r != nil {
		rows = append(rows, []string{"Restrained:", restraintText(*r)})
	}
	rows = append(rows, [][]string{
		{"Priority:", strconv.Itoa(j.Priority)},
		{"Memory:", mib(j.MemoryMiB)},
		{"Task key:", orDash(j.TaskKey)},
		{"Command:", shellQuote(j.Spec.Command)},
		{"Workdir:", orDash(j.Spec.WorkDir)},
	}...)
	if w := j.Spec.Workload; w != nil {
		rows = append(rows, []string{"Workload:", fmt.Sprintf("%s %s, batch %d", w.Model, w.Mode, w.Batch)})
	}
	keys := make([]string, 0, len(j.Spec.Env))
	for k := range j.Spec.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		label := ""
		if i == 0 {
			label = "Env:"
		}
		rows = append(rows, []string{label, k + "=" + j.Spec.Env[k]})
	}
	if w := j.Wait; w != nil {
		rows = append(rows,
			[]string{"Waiting:", w.Reason},
			[]string{"Waiting since:", w.Since.Local().Format(time.RFC3339) + " (" + age(time.Now(), w.Since) + ")"},
			[]string{"Queue position:", strconv.Itoa(w.Position) + " of the waiting jobs"})
	}
	if pl := j.Placement; pl != nil {
		rows = append(rows,
			[]string{"Placement:", placement(pl)},
			[]string{"Device:", orDash(pl.Device)},
			[]string{"Instance key:", orDash(pl.InstanceKey)},
			[]string{"Speed:", fmt.Sprintf("%.2f (predicted; 1 = alone on the whole GPU)", pl.Speed)})
	}
	if j.PID != 0 {
		rows = append(rows, []string{"PID:", strconv.Itoa(j.PID)})
	}
	if j.ExitCode != nil {
		exit := strconv.Itoa(*j.ExitCode)
		if j.Signal != "" {
			exit += " (" + j.Signal + ")"
		}
		rows = append(rows, []string{"Exit code:", exit})
	}
	rows = append(rows, []string{"Restarts:", strconv.Itoa(j.Restarts)})
	if j.IdempotencyKey != "" {
		rows = append(rows, []string{"Idempotency key:", j.IdempotencyKey})
	}
	for _, t := range []struct {
		label string
		at    time.Time
	}{{"Created:", j.CreatedAt}, {"Started:", j.StartedAt}, {"Finished:", j.FinishedAt}} {
		if !t.at.IsZero() {
			rows = append(rows, []string{t.label, t.at.Local().Format(time.RFC3339)})
		}
	}
	rows = append(rows, sloRows(j)...)
	if err := tableNoHeader(p, rows); err != nil {
		return err
	}
	p.Line("\nEvents:")
	var ev [][]string
	for _, e := range j.Events {
		ev = append(ev, []string{strconv.Itoa(e.Seq), e.Time.Local().Format(time.RFC3339), orDash(string(e.From)), string(e.To), orDash(e.Reason)})
	}
	return p.Table("  ", []string{"SEQ", "TIME", "FROM", "TO", "REASON"}, ev)
}

// sloRows are an online job's target and how it stands against it.
func sloRows(j jobWithEvents) [][]string {
	if !j.Online() {
		return nil
	}
	if j.SLO == nil || j.SLO.SLO == nil {
		return [][]string{{"SLO:", orDash(j.Spec.SLO) + " (no request measured yet)"}}
	}
	s := j.SLO.SLO
	target := s.Target
	if j.Spec.SLO == "" && target != "" {
		target += " (mmkd's default)"
	}
	bound := "-"
	if s.BoundMs > 0 {
		bound = fmt.Sprintf("%.2f ms", s.BoundMs)
	}
	rows := [][]string{
		{"SLO:", orDash(target) + ", bound " + bound},
		{"Attained:", fmt.Sprintf("%.2f%% of %d requests (%d late), measured by the %s", 100*s.Attainment, s.Requests, s.Late, s.Source)},
		{"Recent:", fmt.Sprintf("p50 %.2f ms, at the target's percentile %.2f ms over %d requests (%.1f/s), %d late", s.P50Ms, s.PctMs, s.RecentN, s.Rate, s.RecentLate)},
		{"Standing:", string(s.State) + ": " + s.Detail},
		{"Restraint:", s.Rung + " on the offline jobs of " + s.Instance},
	}
	if s.TPCsKept > 0 {
		rows[len(rows)-1][1] += fmt.Sprintf(" (a mask keeping %d TPCs)", s.TPCsKept)
	}
	if s.AloneN > 0 {
		rows = append(rows, []string{"Alone:", fmt.Sprintf("%.2f ms at the target's percentile over %d requests", s.AloneMs, s.AloneN)})
	}
	if !s.Live {
		rows[0][1] += " (last seen; the job's process is not connected)"
	}
	return rows
}

// tableNoHeader writes aligned label/value rows.
func tableNoHeader(p printer, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	return p.Table("", rows[0], rows[1:])
}

func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + " (" + reason + ")"
}

// shellQuote writes an argv as a shell would read it back.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
