package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

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

// usageHeader names the wide table's GPU use columns (usageCells).
var usageHeader = []string{"GPU MEM/LIMIT", "PEAK", "SM", "MEM"}

// usageCells are job j's GPU use in the wide table: its memory (and
// limit), peak and utilisation where mmkd samples them, its limit alone
// where it has one but no sample.
func usageCells(j jobs.Job, usage map[string]node.JobUsage) []string {
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
	return []string{gpuMem, peak, sm, mem}
}
