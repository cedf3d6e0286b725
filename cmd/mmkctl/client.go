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

	"github.com/mmkgpu/mmk/cmd/internal/cli"
)

// serverFlags are the flags of the commands that talk to mmkd, and the
// configuration flags that say where mmkd's socket and token are.
type serverFlags struct {
	addr, token string
	config      *cli.Flags
}

// addServerFlags adds --addr and --token to cmd, and the configuration
// flags that say where mmkd's socket and token are: --data-dir (as
// mmkd's) and --config (data_dir, server.socket, server.token).
func addServerFlags(cmd *cobra.Command) *serverFlags {
	cmd.Flags().String("data-dir", "", "mmkd's data directory, for its Unix socket and token (data_dir; default /var/lib/mmk for root, else ~/.local/state/mmk, then /var/lib/mmk)")
	f := &serverFlags{config: cli.AddConfigFile(cmd.Flags(), map[string]string{"data_dir": "data-dir"})}
	cmd.Flags().StringVar(&f.addr, "addr", "", "mmkd's TCP address, http://HOST:PORT or HOST:PORT (default $MMK_ADDR, else mmkd's Unix socket: server.socket, DATA_DIR/"+cli.SocketName+")")
	cmd.Flags().StringVar(&f.token, "token", "", "mmkd's bearer token over TCP (default $MMK_TOKEN, else DATA_DIR/"+cli.TokenName+" where readable)")
	return f
}

// client returns a client of the mmkd the flags, else the environment,
// name: over TCP at --addr with the token (given, or read from the data
// directory), else over mmkd's Unix socket, where mmkd knows the caller
// by its user and asks no token.
func (f *serverFlags) client() (*client, error) {
	if addr := firstSet(f.addr, os.Getenv("MMK_ADDR")); addr != "" {
		token := firstSet(f.token, os.Getenv("MMK_TOKEN"))
		if token == "" {
			// The token file is mmkd's user's (0600): another user has
			// none and learns so from mmkd's 401.
			if cfg, err := f.config.Load(); err == nil {
				token, _ = cli.Token(cfg)
			}
		}
		return newClient(addr, token)
	}
	cfg, err := f.config.Load()
	if err != nil {
		return nil, err
	}
	sock, err := cli.ClientSocket(cfg)
	if err != nil {
		return nil, err
	}
	if sock == "" {
		return nil, errors.New("server.socket is none: give mmkd's TCP address with --addr or MMK_ADDR")
	}
	return newSocketClient(sock), nil
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
	// socket is the Unix socket it dials ("" over TCP).
	socket string
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

// newSocketClient returns a client of the mmkd serving the Unix socket
// at path.
func newSocketClient(path string) *client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	d := &net.Dialer{Timeout: 5 * time.Second}
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
	return &client{base: &url.URL{Scheme: "http", Host: "mmkd"}, http: &http.Client{Transport: t}, socket: path}
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
		msg += " (give the token with --token or MMK_TOKEN, or leave out --addr to use mmkd's Unix socket)"
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
	where := c.base.String()
	if c.socket != "" {
		where = "unix:" + c.socket
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("mmkd is not reachable at %s: connection refused (is mmkd running? set --addr or MMK_ADDR, or --data-dir)", where)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("mmkd is not reachable at %s: no such socket (is mmkd running? set --addr or MMK_ADDR, or --data-dir)", where)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("mmkd is not reachable at %s: permission denied (the socket admits mmkd's user and server.socket_group)", where)
	}
	return fmt.Errorf("mmkd is not reachable at %s: %w", where, err)
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
