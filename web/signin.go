package web

import (
	"net"
	"path/filepath"

	"github.com/gin-gonic/gin"
)

// SignIn tells a client that has no token where mmkd's token is, so that
// the dashboard's sign-in can name it rather than show the API's 401. It
// never holds the token; it is served without one, as the dashboard's
// files are.
type SignIn struct {
	// TokenRequired says whether TCP callers must show a token.
	TokenRequired bool `json:"tokenRequired"`
	// TokenFile is the file on the node that holds the token, where mmkd
	// made it (DATA_DIR/token): its path for a caller on the node (the
	// socket, or TCP from a loopback address), "DATA_DIR/token" for one
	// elsewhere, to whom a path would tell mmkd's user and home.
	// TokenSetting, where the token is the configuration's instead, names
	// the setting ("server.token").
	TokenFile    string `json:"tokenFile,omitempty"`
	TokenSetting string `json:"tokenSetting,omitempty"`
}

// signIn serves GET /api/v1/signin.
func (s *Server) signIn(c *gin.Context) (any, error) {
	out := SignIn{TokenRequired: s.token != ""}
	switch {
	case !out.TokenRequired:
	case s.tokenFile != "" && onNode(c):
		out.TokenFile = s.tokenFile
	case s.tokenFile != "":
		out.TokenFile = filepath.Join("DATA_DIR", filepath.Base(s.tokenFile))
	default:
		out.TokenSetting = "server.token"
	}
	return out, nil
}

// onNode reports whether a request comes from the node itself: over the
// socket, or over TCP from a loopback address.
func onNode(c *gin.Context) bool {
	if _, ok := PeerOf(c.Request.Context()); ok {
		return true
	}
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOnly lets a TCP request through only where its Host is one the
// server answers to (checkHost), for the routes served without a token.
func (s *Server) hostOnly(c *gin.Context) {
	if _, ok := PeerOf(c.Request.Context()); !ok {
		if err := s.checkHost(c.Request); err != nil {
			s.writeError(c, err)
			c.Abort()
			return
		}
	}
	c.Next()
}
