package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// defaultAddr is mmkd's address when neither --addr nor MMK_ADDR gives
// one.
const defaultAddr = "http://127.0.0.1:7070"

// serverFlags are the flags of the commands that talk to mmkd.
type serverFlags struct {
	addr, token string
}

// addServerFlags adds --addr and --token to cmd.
func addServerFlags(cmd *cobra.Command) *serverFlags {
	f := &serverFlags{}
	cmd.Flags().StringVar(&f.addr, "addr", "", "mmkd's address, http://HOST:PORT or HOST:PORT (default $MMK_ADDR, else "+defaultAddr+")")
	cmd.Flags().StringVar(&f.token, "token", "", "mmkd's bearer token (default $MMK_TOKEN)")
	return f
}

// client returns a client of the mmkd the flags, else the environment,
// name.
func (f *serverFlags) client() (*client, error) {
	addr := firstSet(f.addr, os.Getenv("MMK_ADDR"), defaultAddr)
	return newClient(addr, firstSet(f.token, os.Getenv("MMK_TOKEN")))
}

func firstSet(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// client talks to mmkd's HTTP API.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// newClient returns a client of the mmkd at addr (a URL, or host:port
// meaning http://host:port).
func newClient(addr, token string) (*client, error) {
	raw := addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mmkd address %q: want http://HOST:PORT or HOST:PORT", addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	// No overall timeout: a followed log streams for as long as the job runs.
	return &client{base: u, token: token, http: &http.Client{Transport: t}}, nil
}

// serverError is an error answer of mmkd.
type serverError struct {
	Status  int
	Message string `json:"error"`
	Field   string `json:"field"`
}

func (e *serverError) Error() string {
	msg := "mmkd: " + e.Message
	if e.Field != "" && !strings.HasPrefix(e.Message, e.Field+":") {
		msg += " [field " + e.Field + "]"
	}
	if e.Status == http.StatusUnauthorized {
		msg += " (give the token with --token or MMK_TOKEN)"
	}
	return msg
}

// request sends a request to path (under the base address) with query
// and, if body is not nil, body as JSON. It returns the response of a
// 2xx answer, whose body the caller closes; any other answer is a
// *serverError.
func (c *client) request(ctx context.Context, method, path string, query url.Values, body any, header http.Header) (*http.Response, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	se := &serverError{Status: resp.StatusCode}
	if json.Unmarshal(data, se) != nil || se.Message == "" {
		se.Message = fmt.Sprintf("%s %s: %s %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	return nil, se
}

// unreachable words a failure to reach mmkd.
func (c *client) unreachable(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("mmkd is not reachable at %s: connection refused (is mmkd running? set --addr or MMK_ADDR)", c.base)
	}
	return fmt.Errorf("mmkd is not reachable at %s: %w", c.base, err)
}

// get decodes the JSON answer of GET path into out.
func (c *client) get(ctx context.Context, path string, query url.Values, out any) error {
	resp, err := c.request(ctx, http.MethodGet, path, query, nil, nil)
	if err != nil {
		return err
	}
	return decodeBody(resp, out)
}

// post sends body to path and decodes the JSON answer into out; it
// returns the answer's status.
func (c *client) post(ctx context.Context, path string, body any, header http.Header, out any) (int, error) {
	resp, err := c.request(ctx, http.MethodPost, path, nil, body, header)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, decodeBody(resp, out)
}

func decodeBody(resp *http.Response, out any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read mmkd's answer to %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}
