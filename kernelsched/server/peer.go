package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerPID is the process id of the socket's peer as the kernel recorded
// it at connect (SO_PEERCRED), or declared when that cannot be read.
func peerPID(c *net.UnixConn, declared int) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return declared
	}
	pid := declared
	if err := raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
			pid = int(cred.Pid)
		}
	}); err != nil {
		return declared
	}
	return pid
}
