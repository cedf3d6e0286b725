package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// jobsUsage reads the running jobs' GPU use, by job id; none when mmkd
// samples none (503).
func jobsUsage(ctx context.Context, c *client) (map[string]node.JobUsage, error) {
	var v node.UsageView
	err := c.get(ctx, "/api/v1/usage", nil, &v)
	var se *serverError
	if errors.As(err, &se) && se.Status == http.StatusServiceUnavailable {
		return map[string]node.JobUsage{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]node.JobUsage, len(v.Jobs))
	for _, u := range v.Jobs {
		out[u.ID] = u
	}
	return out, nil
}

// printJobsWide is printJobs with each running job's GPU use.
func printJobsWide(p printer, list []jobs.Job, usage map[string]node.JobUsage, now time.Time) error {
	if len(list) == 0 {
		p.Line("no jobs")
		return nil
	}
	rows := make([][]string, len(list))
	for i, j := range list {
		gpuMem, peak, sm, mem := "-", "-", "-", "-"
		if u, ok := usage[j.ID]; ok {
			gpuMem = strconv.FormatInt(u.UsedMemoryMiB, 10)
			if u.LimitMiB > 0 {
				gpuMem += "/" + strconv.FormatInt(u.LimitMiB, 10)
			}
			gpuMem += " MiB"
			peak = mib(u.PeakMemoryMiB)
			if u.Util {
				sm, mem = fmt.Sprintf("%d%%", u.SMUtil), fmt.Sprintf("%d%%", u.MemUtil)
			}
		} else if pl := j.Placement; pl != nil && pl.MemLimitMiB > 0 {
			gpuMem = "limit " + mib(pl.MemLimitMiB)
		}
		rows[i] = []string{j.ID, j.Spec.Name, string(j.Spec.Kind), string(j.State), strconv.Itoa(j.Priority),
			mib(j.MemoryMiB), gpuMem, peak, sm, mem, placement(j.Placement), age(now, j.CreatedAt), j.Reason}
	}
	return p.Table("", []string{"ID", "NAME", "TYPE", "STATE", "PRIO", "MEMORY", "GPU MEM/LIMIT", "PEAK", "SM", "MEM", "PLACEMENT", "AGE", "REASON"}, rows)
}
