// Package unixsock makes Unix stream sockets with the mode and owner
// asked for, whatever the process's umask: mmkd's API socket and the
// kernel schedulers' sockets. A socket is bound under a temporary name
// beside its path, given its owner and mode, and renamed into place, so
// that it is never reachable at its path with another mode. No mmk
// import.
package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// MaxPath is the longest path a Unix socket address holds.
const MaxPath = 107

// Listen listens on a Unix stream socket at path with the given mode,
// owned by uid and gid (-1: unchanged). A socket left at path by an
// earlier process is replaced; any other file there is an error. Closing
// the listener leaves the socket file: the caller removes it.
func Listen(path string, mode os.FileMode, uid, gid int) (*net.UnixListener, error) {
	if len(path) > MaxPath {
		return nil, fmt.Errorf("socket path %s is longer than %d bytes", path, MaxPath)
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("socket path %s exists and is not a socket", path)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+strconv.Itoa(os.Getpid()))
	if len(tmp) > MaxPath {
		tmp = filepath.Join(filepath.Dir(path), "."+strconv.Itoa(os.Getpid())+".sock")
	}
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	fail := func(err error) (*net.UnixListener, error) {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	// Closing the listener must not remove the socket by its old name.
	ln.SetUnlinkOnClose(false)
	if uid >= 0 || gid >= 0 {
		if err := os.Lchown(tmp, uid, gid); err != nil {
			return fail(err)
		}
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return ln, nil
}

// Peer is the process at the other end of a Unix socket connection as
// the kernel recorded it when it connected (SO_PEERCRED): it cannot be
// forged by the caller.
type Peer struct {
	PID, UID, GID int
}

// PeerCred reads the peer of c as the kernel recorded it at connect
// (SO_PEERCRED).
func PeerCred(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", cerr)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}
