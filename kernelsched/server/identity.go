package server

import (
	"fmt"
	"net"

	"github.com/mmkgpu/mmk/internal/unixsock"
	"github.com/mmkgpu/mmk/slo"
)

// Peer is a connecting process as the kernel recorded it at connect
// (SO_PEERCRED): the hook cannot make it say anything else.
type Peer = unixsock.Peer

// Identity is who a connecting task is, as the one who runs the server
// knows it (Config.Identify): it replaces what the hook declares.
type Identity struct {
	Priority int
	Online   bool
	TaskKey  string
	Name     string
	// Job is the owner's name for the task's job; Target its latency
	// target (nil: the latency controller's own, by name or default).
	Job    string
	Target *slo.Target
	// RestrainOthers lets an online task's target mask or suspend the
	// offline tasks of other users (an admin allowed it: mmkd's
	// slo.restrain_others); without it, those rungs reach only its own
	// user's offline tasks, and priority and guard every task. A server
	// without Identify lets every target reach every task.
	RestrainOthers bool
}

// DefaultMaxTasks is Config.MaxTasks when unset.
const DefaultMaxTasks = 256

// peerOf reads the socket's peer; ok is false where it cannot be read.
func peerOf(c *net.UnixConn) (Peer, bool) {
	p, err := unixsock.PeerCred(c)
	if err != nil || p.PID <= 0 {
		return Peer{}, false
	}
	return p, true
}

// identify applies Config.Identify to a hello: the declared priority,
// kind, key and name give way to the identity of the peer, which it
// returns too (nil without Config.Identify).
func (s *Server) identify(c *net.UnixConn, h Hello) (Hello, *Identity, error) {
	if s.cfg.Identify == nil {
		return h, nil, nil
	}
	p, ok := peerOf(c)
	if !ok {
		return h, nil, errNoPeer
	}
	id, err := s.cfg.Identify(p)
	if err != nil {
		return h, nil, err
	}
	h.PID, h.Priority, h.Online, h.TaskKey, h.Name = p.PID, id.Priority, id.Online, id.TaskKey, id.Name
	return h, &id, nil
}

// jobOf names whose share of the task slots and names a connecting task
// takes (shares): its job where the server's owner named one, else its
// process (the kernel's word, else its hook's).
func (s *Server) jobOf(c *net.UnixConn, h Hello, id *Identity) string {
	if id != nil && id.Job != "" {
		return "job " + id.Job
	}
	return fmt.Sprintf("process %d", peerPID(c, h.PID))
}
