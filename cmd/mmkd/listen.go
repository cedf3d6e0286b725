package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"

	"github.com/mmkgpu/mmk/cmd/internal/cli"
	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/web"
)

// socketMode lets mmkd's user and the socket's group connect.
const socketMode = 0o660

// newAPI is the HTTP API over the node: TCP callers must show the token
// (server.token, or the data directory's, made on first start) and are
// mmkd's own user; socket callers are known by theirs.
func newAPI(cfg *configs.Config, backend partitioner.Backend, n *node.Node, log *slog.Logger) (*web.Server, error) {
	token, err := cli.ServerToken(cfg, log)
	if err != nil {
		return nil, err
	}
	tokenFile, err := cli.TokenFile(cfg)
	if err != nil {
		return nil, err
	}
	self := jobs.Self()
	if self.UID == 0 && !cfg.Jobs.AllowRoot {
		log.Info("jobs of root are refused (jobs.allow_root is off): submit over the socket as the user the job should run as",
			"tcpCallersRunAs", self.String())
	}
	return web.New(web.Options{Backend: backend, Node: n, Log: log, Token: token, TokenFile: tokenFile, TokenOwner: &self,
		AllowedHosts: cfg.Server.AllowedHosts, MaxStreams: cfg.Server.MaxStreams, MaxBodyBytes: cfg.Server.MaxBodyBytes}), nil
}

// listeners are what mmkd serves on, under connection caps.
type listeners struct {
	all      []net.Listener
	tcp      net.Listener
	socket   string
	maxConns int
}

// listen opens the TCP address and the Unix socket the configuration
// names, under a cap of connections (web.ConnLimit) split between them:
// the socket keeps a quarter (at most 64) of its own, so that clients
// holding TCP connections idle cannot keep the node's users out. Within
// each, web.ConnCap keeps one user of the socket, or TCP clients without
// the token, to a quarter.
func listen(cfg *configs.Config, log *slog.Logger) (*listeners, error) {
	conns, err := web.ConnLimit(cfg.Server.MaxConns)
	if err != nil {
		return nil, err
	}
	if conns < cfg.Server.MaxConns {
		log.Warn("server.max_conns lowered to keep descriptors for jobs (raise the descriptor limit, LimitNOFILE under systemd)",
			"maxConns", conns, "configured", cfg.Server.MaxConns, "reserved", web.ReservedFDs)
	}
	socketConns := min(64, conns/4)
	l := &listeners{maxConns: conns}
	tcp, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (server.listen): %w", cfg.Server.Listen, err)
	}
	l.tcp = web.NewConnCap(conns - socketConns).Wrap(tcp)
	l.all = append(l.all, l.tcp)
	path, err := cli.SocketPath(cfg)
	if err != nil {
		l.close()
		return nil, err
	}
	if path == "" {
		return l, nil
	}
	gid, err := socketGroup(cfg.Server.SocketGroup)
	if err != nil {
		l.close()
		return nil, err
	}
	ln, err := web.ListenUnix(path, socketMode, gid)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("server.socket: %w", err)
	}
	l.socket = path
	l.all = append(l.all, web.NewConnCap(socketConns).Wrap(web.PeerListener(ln)))
	return l, nil
}

// socketGroup is the gid of server.socket_group (-1: mmkd's own).
func socketGroup(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(name); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, &configs.FieldError{Key: "server.socket_group", Value: name, Reason: "is not a group of this system: " + err.Error()}
	}
	return strconv.Atoi(g.Gid)
}

func (l *listeners) tcpAddr() net.Addr { return l.tcp.Addr() }

func (l *listeners) tcpURL() string { return "http://" + l.tcp.Addr().String() }

// close closes the listeners (http.Server.Shutdown has closed those it
// served) and removes the socket.
func (l *listeners) close() {
	for _, ln := range l.all {
		_ = ln.Close()
	}
	if l.socket != "" {
		_ = os.Remove(l.socket)
	}
}
