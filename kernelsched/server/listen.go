package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/mmkgpu/mmk/internal/unixsock"
)

// serving records that Serve runs: Listen may add sockets until ctx ends.
func (s *Server) serving(ctx context.Context) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.lnCtx != nil {
		return errors.New("kernel scheduler server: already serving")
	}
	s.lnCtx, s.extra = ctx, map[string]*net.UnixListener{}
	return nil
}

// Listen serves a further socket at path, mode 0600, owned by uid and
// gid: the jobs of a user other than the server's connect through one of
// their own, and no other user can connect to it. A path served already
// is left as it is. It fails when Serve does not run.
func (s *Server) Listen(path string, uid, gid int) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.lnCtx == nil || s.lnCtx.Err() != nil {
		return errors.New("kernel scheduler server: not serving")
	}
	if _, ok := s.extra[path]; ok {
		return nil
	}
	ln, err := unixsock.Listen(path, 0o600, uid, gid)
	if err != nil {
		return fmt.Errorf("kernel scheduler server: %w", err)
	}
	s.extra[path] = ln
	ctx := s.lnCtx
	s.accepting.Add(1)
	go func() {
		defer s.accepting.Done()
		s.accept(ctx, ln)
	}()
	s.cfg.Log.Info("kernel scheduler serving a user's socket", "socket", path, "uid", uid)
	return nil
}

// closeListeners closes and removes the sockets Listen added.
func (s *Server) closeListeners() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for path, ln := range s.extra {
		ln.Close()
		_ = os.Remove(path)
	}
	s.extra = nil
}
