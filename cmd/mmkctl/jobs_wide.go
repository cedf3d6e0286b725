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

// wideInfo is what the wide table adds to the jobs, by job id: their
// GPU use and the online jobs' latency against their targets.
type wideInfo struct {
	usage map[string]node.JobUsage
	slo   map[string]node.JobSLO
}

// readWide reads the wide table's columns.
func readWide(ctx context.Context, c *client) (*wideInfo, error) {
	usage, err := jobsUsage(ctx, c)
	if err != nil {
		return nil, err
	}
	var v node.SLOView
	if err := getOptional(ctx, c, "/api/v1/slo", &v); err != nil {
		return nil, err
	}
	w := &wideInfo{usage: usage, slo: make(map[string]node.JobSLO, len(v.Jobs))}
	for _, j := range v.Jobs {
		w.slo[j.ID] = j
	}
	return w, nil
}

// getOptional reads what mmkd may not serve: a 503 leaves v as it is.
func getOptional(ctx context.Context, c *client, path string, v any) error {
	err := c.get(ctx, path, nil, v)
	var se *serverError
	if errors.As(err, &se) && se.Status == http.StatusServiceUnavailable {
		return nil
	}
	return err
}

// jobsUsage reads the running jobs' GPU use, by job id; none when mmkd
// samples none (503).
func jobsUsage(ctx context.Context, c *client) (map[string]node.JobUsage, error) {
	var v node.UsageView
	if err := getOptional(ctx, c, "/api/v1/usage", &v); err != nil {
		return nil, err
	}
	out := make(map[string]node.JobUsage, len(v.Jobs))
	for _, u := range v.Jobs {
		out[u.ID] = u
	}
	return out, nil
}

// sloHeader names the wide table's latency columns (sloCells).
var sloHeader = []string{"SLO", "ATTAINED", "P99/TARGET"}

// sloCells are an online job's latency in the wide table: its target
// (and who measures it), the share of its requests within it, and the
// latency at the target's percentile over the controller's window against
// the bound.
func sloCells(j jobs.Job, slo map[string]node.JobSLO) []string {
	s, ok := slo[j.ID]
	if !ok {
		if j.Online() && j.Spec.SLO != "" {
			return []string{j.Spec.SLO, "-", "-"}
		}
		return []string{"-", "-", "-"}
	}
	target := orDash(s.Target)
	if s.Requests == 0 {
		return []string{target, "-", "-"}
	}
	att := fmt.Sprintf("%.2f%%", 100*s.Attainment)
	pct := "-"
	if s.RecentN > 0 {
		pct = fmt.Sprintf("%.1f", s.PctMs)
		if s.BoundMs > 0 {
			pct += fmt.Sprintf("/%.1f ms", s.BoundMs)
		} else {
			pct += " ms"
		}
	}
	return []string{target, att, pct}
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
