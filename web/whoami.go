package web

import (
	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
)

// WhoAmI is who mmkd takes a caller for, and what that lets it do: the
// dashboard shows its "New job" form only to a caller whose jobs would
// run, and the reason to the others.
type WhoAmI struct {
	// User is the user the caller's jobs run as: over the socket the
	// calling process's, over TCP the token's holder, mmkd's own user.
	User jobs.Owner `json:"user"`
	// Over is how the caller came: "socket" or "tcp".
	Over string `json:"over"`
	// Admin may cancel any job and read any log.
	Admin bool `json:"admin"`
	// MaySubmit says whether a job the caller submits would be taken;
	// SubmitRefused, when not, is the refusal it would get.
	MaySubmit     bool   `json:"maySubmit"`
	SubmitRefused string `json:"submitRefused,omitempty"`
}

// whoAmI serves GET /api/v1/whoami.
func (s *Server) whoAmI(c *gin.Context) (any, error) {
	cl := callerOf(c)
	w := WhoAmI{User: cl.owner, Over: "tcp", Admin: cl.admin}
	if _, ok := PeerOf(c.Request.Context()); ok {
		w.Over = "socket"
	}
	if err := s.node.MayRunAs(cl.owner); err != nil {
		w.SubmitRefused = err.Error()
	} else {
		w.MaySubmit = true
	}
	return w, nil
}
