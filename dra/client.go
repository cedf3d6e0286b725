package dra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// Mmkd is what the driver asks of the node's mmkd. RESTClient speaks its
// HTTP API; a change of transport is another implementation.
type Mmkd interface {
	// Plan is the node's GPUs and instances.
	Plan(ctx context.Context) (Plan, error)
	// PrepareClaim submits a claim job (or finds the claim's live one)
	// and waits up to wait for its grant. The job may come back still
	// pending.
	PrepareClaim(ctx context.Context, spec jobs.Spec, wait time.Duration) (jobs.Job, error)
	// ReleaseClaim ends the claim's job; a claim released already is no
	// error.
	ReleaseClaim(ctx context.Context, uid string) error
}

// Plan is the part of mmkd's placement view (GET /api/v1/plan) the
// driver publishes.
type Plan struct {
	GPUs []GPU `json:"gpus"`
}

// GPU is one GPU of the plan.
type GPU struct {
	Index     int        `json:"index"`
	UUID      string     `json:"uuid"`
	Model     string     `json:"model"`
	MIG       bool       `json:"mig"`
	Instances []Instance `json:"instances"`
}

// Instance is a MIG instance, or a whole GPU without MIG.
type Instance struct {
	Key string `json:"key"`
	// Name is the instance's name as mmkctl, the API and the dashboard
	// show it (gpu0/gi2; gpu1 without MIG).
	Name      string `json:"name"`
	Profile   string `json:"profile"`
	SMs       int    `json:"sms"`
	MemoryMiB int64  `json:"memoryMiB"`
	Device    string `json:"device"`
}

// RESTClient is Mmkd over mmkd's REST API.
type RESTClient struct {
	// Base is mmkd's address, e.g. http://127.0.0.1:7070.
	Base string
	// Token is mmkd's bearer token (server.token), if it has one.
	Token string
	// HTTP is the client (default: one with a 90 s timeout, beyond
	// the longest wait).
	HTTP *http.Client
}

var _ Mmkd = (*RESTClient)(nil)

// Plan implements Mmkd.
func (c *RESTClient) Plan(ctx context.Context) (Plan, error) {
	var p Plan
	_, err := c.do(ctx, http.MethodGet, "/api/v1/plan", nil, &p)
	return p, err
}

// PrepareClaim implements Mmkd.
func (c *RESTClient) PrepareClaim(ctx context.Context, spec jobs.Spec, wait time.Duration) (jobs.Job, error) {
	if spec.Claim == nil {
		return jobs.Job{}, fmt.Errorf("prepare claim: the spec names no claim")
	}
	var j jobs.Job
	path := "/api/v1/claims/" + url.PathEscape(spec.Claim.UID) + "?wait=" + strconv.Itoa(int(wait/time.Second))
	_, err := c.do(ctx, http.MethodPut, path, spec, &j)
	return j, err
}

// ReleaseClaim implements Mmkd.
func (c *RESTClient) ReleaseClaim(ctx context.Context, uid string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/claims/"+url.PathEscape(uid), nil, nil)
	return err
}

// do sends a request with a JSON body (if any) and decodes a JSON answer
// into out (if any); an answer of 400 or more is an error with mmkd's
// message.
func (c *RESTClient) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("mmkd %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, rd)
	if err != nil {
		return 0, fmt.Errorf("mmkd %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 90 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("mmkd %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("mmkd %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e struct{ Error, Field string }
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		if e.Field != "" {
			return resp.StatusCode, fmt.Errorf("mmkd %s %s: %d: %s (field %s)", method, path, resp.StatusCode, e.Error, e.Field)
		}
		return resp.StatusCode, fmt.Errorf("mmkd %s %s: %d: %s", method, path, resp.StatusCode, e.Error)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("mmkd %s %s: decode the answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
