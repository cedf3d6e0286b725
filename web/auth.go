package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// auth requires `Authorization: Bearer <token>` when the server has a
// token. Both tokens are hashed before the constant-time comparison, so
// that neither the content nor the length of the server's token leaks
// through timing.
func (s *Server) auth(c *gin.Context) {
	if s.token == "" {
		c.Next()
		return
	}
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
	c.Next()
}
