package web

import "context"

// ContextWithPeer is ctx as ConnContext makes it for a connection of p
// on the Unix socket: tests of package web_test send requests "from" any
// uid without a socket or a process of that user.
func ContextWithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}
