package web

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/mmkgpu/mmk/internal/unixsock"
)

// Peer is the process at the other end of a Unix socket connection as
// the kernel recorded it when it connected (SO_PEERCRED): it cannot be
// forged by the caller.
type Peer = unixsock.Peer

type peerKey struct{}

// PeerOf returns the peer of a request that came over a Unix socket.
func PeerOf(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// ConnContext is http.Server.ConnContext for mmkd's listeners: a
// connection accepted by a PeerListener carries its peer into every
// request's context, and one under a ConnCap its place there (Trust). A Unix socket connection whose peer could not be
// read was closed by the listener and never gets here.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	for {
		switch x := c.(type) {
		case *peerConn:
			return context.WithValue(ctx, peerKey{}, x.peer)
		case *cappedConn:
			ctx = context.WithValue(ctx, cappedKey{}, x)
			c = x.Unwrap()
		case interface{ Unwrap() net.Conn }:
			c = x.Unwrap()
		default:
			return ctx
		}
	}
}

// peerOfConn is the peer of a connection a PeerListener accepted,
// under whatever wraps it.
func peerOfConn(c net.Conn) (Peer, bool) {
	for {
		switch x := c.(type) {
		case *peerConn:
			return x.peer, true
		case interface{ Unwrap() net.Conn }:
			c = x.Unwrap()
		default:
			return Peer{}, false
		}
	}
}

// peerConn is an accepted Unix socket connection with its peer.
type peerConn struct {
	net.Conn
	peer Peer
}

// peerListener reads each accepted connection's peer.
type peerListener struct {
	net.Listener
}

// PeerListener wraps a Unix socket listener: each connection it accepts
// carries the credentials of the process that connected (ConnContext).
func PeerListener(ln *net.UnixListener) net.Listener { return peerListener{ln} }

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			return nil, fmt.Errorf("peer listener: %T is not a Unix socket connection", c)
		}
		p, err := unixsock.PeerCred(uc)
		if err != nil {
			// Without its peer a request could not be told apart from
			// mmkd's own: drop it, keep serving.
			uc.Close()
			continue
		}
		return &peerConn{Conn: uc, peer: p}, nil
	}
}

// ListenUnix serves on a Unix socket at path with the given mode and
// group (gid < 0: the process's own), whatever the umask
// (internal/unixsock). A socket left at path by an earlier mmkd is
// replaced (the store's lock keeps two mmkds of one data directory from
// running at once).
func ListenUnix(path string, mode os.FileMode, gid int) (*net.UnixListener, error) {
	return unixsock.Listen(path, mode, -1, gid)
}
