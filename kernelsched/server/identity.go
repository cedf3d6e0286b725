package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// Peer is a connecting process as the kernel recorded it at connect
// (SO_PEERCRED): the hook cannot make it say anything else.
type Peer struct {
	PID, UID, GID int
}

// Identity is who a connecting task is, as the one who runs the server
// knows it (Config.Identify): it replaces what the hook declares.
type Identity struct {
	Priority int
	Online   bool
	TaskKey  string
	Name     string
}

// DefaultMaxTasks is Config.MaxTasks when unset.
const DefaultMaxTasks = 256

// peerOf reads the socket's peer; ok is false where it cannot be read.
func peerOf(c *net.UnixConn) (p Peer, ok bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, false
	}
	if err := raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
			p, ok = Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, true
		}
	}); err != nil {
		return Peer{}, false
	}
	return p, ok
}

// identify applies Config.Identify to a hello: the declared priority,
// kind, key and name give way to the identity of the peer.
func (s *Server) identify(c *net.UnixConn, h Hello) (Hello, error) {
	if s.cfg.Identify == nil {
		return h, nil
	}
	p, ok := peerOf(c)
	if !ok {
		return h, errNoPeer
	}
	id, err := s.cfg.Identify(p)
	if err != nil {
		return h, err
	}
	h.PID, h.Priority, h.Online, h.TaskKey, h.Name = p.PID, id.Priority, id.Online, id.TaskKey, id.Name
	return h, nil
}
