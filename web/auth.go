package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
)

// Who may call the API. A request comes either over mmkd's Unix socket,
// where the kernel names the calling process's user (SO_PEERCRED, see
// peer.go) and the socket's mode and group decide who may connect, or
// over TCP, where the caller must show the server's token and the Host
// must be one the server answers to. A TCP caller with the token is
// mmkd's own user (Options.TokenOwner): whoever can read the token file
// (0600 in the data directory) is that user already.

// caller is who sent a request, as auth found out.
type caller struct {
	// owner is the user the caller's jobs run as.
	owner jobs.Owner
	// admin may cancel any job, read any log and prepare, read and
	// release claims (the DRA driver's, forClaims): root or mmkd's own
	// user over the socket, and the token's holder.
	admin bool
}

// callerKey is the Gin context key of the request's caller.
const callerKey = "mmk.caller"

// callerOf returns the request's caller (set by auth).
func callerOf(c *gin.Context) caller {
	if v, ok := c.Get(callerKey); ok {
		return v.(caller)
	}
	return caller{}
}

// auth finds out who sent the request (see above): over the Unix socket
// the peer's user; over TCP the token's holder, once the Host is one the
// server answers to and the token matches (when the server has one).
// Both tokens are hashed before the constant-time comparison, so that
// neither the content nor the length of the server's token leaks through
// timing.
func (s *Server) auth(c *gin.Context) {
	if p, ok := PeerOf(c.Request.Context()); ok {
		c.Set(callerKey, caller{owner: jobs.NamedOwner(p.UID, p.GID), admin: p.UID == 0 || p.UID == s.tokenOwner.UID})
		c.Next()
		return
	}
	if err := s.checkHost(c.Request); err != nil {
		s.writeError(c, err)
		c.Abort()
		return
	}
	if s.token != "" {
		scheme, got, ok := strings.Cut(c.GetHeader("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			s.writeError(c, &apiError{Status: http.StatusUnauthorized, Field: "Authorization",
				Message: "this mmkd requires a token: send Authorization: Bearer <token>"})
			c.Abort()
			return
		}
		want := sha256.Sum256([]byte(s.token))
		have := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
			s.writeError(c, &apiError{Status: http.StatusUnauthorized, Field: "Authorization", Message: "the bearer token is not valid"})
			c.Abort()
			return
		}
	}
	Trust(c.Request.Context())
	c.Set(callerKey, caller{owner: s.tokenOwner, admin: true})
	c.Next()
}

// checkHost refuses a TCP request whose Host is a name the server does
// not answer to. A page of another site whose name an attacker points at
// 127.0.0.1 (DNS rebinding) is, to the browser, of the same origin as the
// daemon: only its Host header, the attacker's name, tells it apart. An
// IP address, localhost and the names in Options.AllowedHosts pass.
func (s *Server) checkHost(r *http.Request) error {
	if r.Host == "" {
		return nil // HTTP/1.0 without Host: no browser sends that
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil
	}
	for _, h := range s.allowedHosts {
		if host == h {
			return nil
		}
	}
	return &apiError{Status: http.StatusMisdirectedRequest, Field: "Host",
		Message: "this mmkd does not answer to the host " + truncate(r.Host, 80) + " (server.allowed_hosts lists the names it answers to besides IP addresses and localhost)"}
}

// crossOrigin refuses state-changing requests that a browser sent from
// another origin (Sec-Fetch-Site, else Origin against Host): a page of
// another site must not submit or cancel jobs, whatever else it knows.
func (s *Server) crossOrigin(c *gin.Context) {
	if err := s.origins.Check(c.Request); err != nil {
		s.writeError(c, &apiError{Status: http.StatusForbidden, Field: "Origin",
			Message: "cross-origin request refused: " + err.Error()})
		c.Abort()
		return
	}
	c.Next()
}

// owns reports whether the caller may act on the job (cancel it, read its
// log): the admin, and the user it runs as. A job from before owners were
// recorded runs as mmkd's user.
func (cl caller) owns(j jobs.Job) bool {
	if cl.admin {
		return true
	}
	if j.Owner == nil {
		return false
	}
	return j.Owner.UID == cl.owner.UID
}

// forbidden is the 403 of a caller acting on another user's job.
func forbidden(cl caller, j jobs.Job, what string) *apiError {
	whose := "mmkd's user"
	if j.Owner != nil {
		whose = j.Owner.String()
	}
	return &apiError{Status: http.StatusForbidden,
		Message: "job " + j.ID + " runs as " + whose + ": " + cl.owner.String() + " may not " + what + " it"}
}

// forClaims lets only the admin through to the claim routes: a claim is
// the DRA driver's (it speaks to mmkd with the token, or over the socket
// as root), and releasing one drops mmk's accounting of a pod's share
// while the pod runs.
func (s *Server) forClaims(c *gin.Context) {
	if err := s.mayClaim(callerOf(c)); err != nil {
		s.writeError(c, err)
		c.Abort()
		return
	}
	c.Next()
}

// mayClaim refuses a caller other than the admin with a 403 that says
// who may act on claims.
func (s *Server) mayClaim(cl caller) error {
	if cl.admin {
		return nil
	}
	return &apiError{Status: http.StatusForbidden, Message: fmt.Sprintf(
		"claims are for the DRA driver: the token holder, root or mmkd's user %s; the caller, %s, is none of these", s.tokenOwner, cl.owner)}
}
