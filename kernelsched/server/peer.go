package server

import "net"

// peerPID is the process id of the socket's peer as the kernel recorded
// it at connect (SO_PEERCRED), or declared when that cannot be read.
func peerPID(c *net.UnixConn, declared int) int {
	if p, ok := peerOf(c); ok {
		return p.PID
	}
	return declared
}
