package web

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds on what clients may hold of mmkd. A client that opens
// connections and says nothing, or keeps them idle, or opens many live
// streams, must not take the descriptors, memory or CPU that jobs and
// the placement loop need.
const (
	// DefaultMaxConns caps the connections mmkd serves at once over all
	// its listeners (server.max_conns); ConnLimit lowers it to fit the
	// descriptor limit.
	DefaultMaxConns = 1024
	// DefaultMaxStreams caps the live streams served at once
	// (server.max_streams); one more is answered 503.
	DefaultMaxStreams = 64
	// ReservedFDs are the descriptors kept out of the connections' reach:
	// job starts (a shim's pipe, log and records), the store and its
	// backups, MPS daemons, kernel scheduler sockets and their clients.
	ReservedFDs = 512
	// minConns is the least connection cap ConnLimit returns.
	minConns = 16

	// ReadHeaderTimeout bounds the wait for a request's headers,
	// ReadTimeout for the whole request with its body (at most
	// max_body_bytes), IdleTimeout for the next request on a kept-alive
	// connection. Responses have no write timeout: followed logs and
	// streams last as long as they are read; a client that stops reading
	// holds only its own connection, which the cap counts.
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	IdleTimeout       = 60 * time.Second
)

// ConnLimit is the connection cap to serve with: conns (DefaultMaxConns
// when 0), lowered so that ReservedFDs descriptors stay free under the
// process's descriptor limit (RLIMIT_NOFILE, which Go raises to its hard
// limit at start), and at least minConns.
func ConnLimit(conns int) (int, error) {
	if conns <= 0 {
		conns = DefaultMaxConns
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("descriptor limit: %w", err)
	}
	if room := int64(lim.Cur) - ReservedFDs; room < int64(conns) {
		conns = int(max(room, minConns))
	}
	return conns, nil
}

// NewHTTPServer is the http.Server mmkd serves h with: read and idle
// timeouts, and the peer of each Unix socket connection in its requests'
// context (ConnContext).
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleTimeout,
		ConnContext:       ConnContext,
	}
}

// ConnCap is a cap on the connections of several listeners together:
// Wrap each listener, and it accepts a connection only while fewer than
// the cap are open; further clients wait in the kernel's backlog, holding
// none of mmkd's descriptors.
type ConnCap struct {
	slots chan struct{}
}

// NewConnCap returns a cap of n connections.
func NewConnCap(n int) *ConnCap { return &ConnCap{slots: make(chan struct{}, n)} }

// Open is the number of connections open now.
func (c *ConnCap) Open() int { return len(c.slots) }

// Wrap returns ln under the cap.
func (c *ConnCap) Wrap(ln net.Listener) net.Listener {
	return &cappedListener{Listener: ln, cap: c, done: make(chan struct{})}
}

type cappedListener struct {
	net.Listener
	cap       *ConnCap
	done      chan struct{}
	closeOnce sync.Once
}

func (l *cappedListener) Accept() (net.Conn, error) {
	select {
	case l.cap.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.cap.slots
		return nil, err
	}
	return &cappedConn{Conn: c, release: func() { <-l.cap.slots }}, nil
}

func (l *cappedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// cappedConn gives its slot back when closed.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Unwrap is the connection under the cap (ConnContext reads its peer).
func (c *cappedConn) Unwrap() net.Conn { return c.Conn }
