package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
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

// ConnCap is a cap on the connections of a listener: Wrap the listener,
// and it accepts a connection only while fewer than the cap are open;
// further clients wait in the kernel's backlog, holding none of mmkd's
// descriptors. Within the cap no one client may hold the rest out (issue
// 38, row 7):
//
//   - on a Unix socket (a PeerListener's connections), a user (uid)
//     holds at most a quarter of the slots, and a connection beyond its
//     first only while more than a quarter stay free: the last quarter is
//     kept for users who hold none. A connection past its user's share
//     is answered 503 with Retry-After and closed.
//   - elsewhere (TCP, where any local process may connect and /healthz
//     needs no token), connections that have not shown the token (Trust)
//     hold at most a quarter of the slots: one more closes the oldest of
//     them. A token holder's connection, once trusted, is never closed
//     for another.
type ConnCap struct {
	slots chan struct{}
	n     int
	mu    sync.Mutex
	open  atomic.Int64
	users map[int]int   // the socket's connections by uid
	anon  []*cappedConn // untrusted connections, oldest first
}

// NewConnCap returns a cap of n connections.
func NewConnCap(n int) *ConnCap {
	return &ConnCap{slots: make(chan struct{}, n), n: n, users: map[int]int{}}
}

// Open is the number of connections open now.
func (c *ConnCap) Open() int { return int(c.open.Load()) }

// share is the most connections one user, or all untrusted connections,
// may hold.
func (c *ConnCap) share() int { return max(1, c.n/4) }

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
	for {
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
		cc := &cappedConn{Conn: c, cap: l.cap, uid: -1}
		if p, ok := peerOfConn(c); ok {
			if err := l.cap.admitUser(p.UID); err != nil {
				refuse(c, err)
				<-l.cap.slots
				continue
			}
			cc.uid = p.UID
			l.cap.open.Add(1)
			return cc, nil
		}
		l.cap.open.Add(1)
		if old := l.cap.addUntrusted(cc); old != nil {
			old.Close()
		}
		return cc, nil
	}
}

func (l *cappedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// admitUser counts a connection of uid, whose slot is taken, or says why
// it is past the user's share.
func (c *ConnCap) admitUser(uid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	held, free := c.users[uid], c.n-len(c.slots)
	switch {
	case held >= c.share():
		return fmt.Errorf("uid %d holds %d connections, its share of %d", uid, held, c.n)
	case held > 0 && free < c.n/4:
		return fmt.Errorf("uid %d holds %d connections and the last %d of %d are kept for other users", uid, held, free+1, c.n)
	}
	c.users[uid] = held + 1
	return nil
}

// addUntrusted counts an untrusted connection and returns the oldest
// one it displaces (nil: none).
func (c *ConnCap) addUntrusted(cc *cappedConn) *cappedConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc.untrusted = true
	c.anon = append(c.anon, cc)
	if len(c.anon) <= c.share() {
		return nil
	}
	old := c.anon[0]
	old.untrusted = false
	c.anon = c.anon[1:]
	return old
}

// forget takes cc out of the untrusted connections.
func (c *ConnCap) forget(cc *cappedConn) {
	if !cc.untrusted {
		return
	}
	cc.untrusted = false
	for i, a := range c.anon {
		if a == cc {
			c.anon = append(c.anon[:i], c.anon[i+1:]...)
			return
		}
	}
}

// refuse answers a connection past its user's share and closes it.
func refuse(c net.Conn, why error) {
	body := fmt.Sprintf(`{"error":%q}`, why.Error()+": retry when one of them closes")
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = c.Close()
}

// cappedConn gives its slot back when closed.
type cappedConn struct {
	net.Conn
	cap  *ConnCap
	once sync.Once
	// uid is the socket user holding it (-1: none); untrusted, under
	// cap.mu, whether it is among cap.anon.
	uid       int
	untrusted bool
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.cap.mu.Lock()
		if c.uid >= 0 {
			if c.cap.users[c.uid]--; c.cap.users[c.uid] <= 0 {
				delete(c.cap.users, c.uid)
			}
		}
		c.cap.forget(c)
		c.cap.mu.Unlock()
		c.cap.open.Add(-1)
		<-c.cap.slots
	})
	return err
}

// Unwrap is the connection under the cap (ConnContext reads its peer).
func (c *cappedConn) Unwrap() net.Conn { return c.Conn }

type cappedKey struct{}

// Trust marks the connection of a request as a token holder's: the cap
// no longer closes it for another (ConnCap). The auth middleware calls it
// once the token matched.
func Trust(ctx context.Context) {
	if cc, ok := ctx.Value(cappedKey{}).(*cappedConn); ok {
		cc.cap.mu.Lock()
		cc.cap.forget(cc)
		cc.cap.mu.Unlock()
	}
}
