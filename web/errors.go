package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// apiError is an error with the HTTP status it is answered with and,
// when one field of the request is at fault, that field's name (a JSON
// path such as "workload.mode", a query parameter or a header).
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 naming the field at fault.
func badRequest(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
}

// nodeError maps the Node's client errors to their statuses: a bad spec
// to 400, an owner the node may not run jobs as to 403, an unknown job to
// 404, a move the job's state forbids to 409, a
// node still recovering (or stopping) and a cancel still pending (its
// stop failed; the node tries again) to 503. Anything else is wrapped
// with op (and answered with 500).
func nodeError(op string, err error) error {
	var fe *jobs.FieldError
	var te *jobs.TransitionError
	switch {
	case errors.As(err, &fe):
		return &apiError{Status: http.StatusBadRequest, Field: fe.Field, Message: fe.Error()}
	case errors.Is(err, jobs.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Message: err.Error()}
	case errors.As(err, &te):
		return &apiError{Status: http.StatusConflict, Message: te.Error()}
	case errors.Is(err, jobs.ErrForbidden):
		return &apiError{Status: http.StatusForbidden, Message: err.Error()}
	case errors.Is(err, jobs.ErrIdempotencyConflict):
		return &apiError{Status: http.StatusConflict, Field: "Idempotency-Key", Message: err.Error()}
	case errors.Is(err, node.ErrClaimJob), errors.Is(err, node.ErrClaimConflict):
		return &apiError{Status: http.StatusConflict, Message: err.Error()}
	case errors.Is(err, node.ErrNotReady), errors.Is(err, node.ErrCancelPending):
		return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error()}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// handle adapts a handler that returns data or an error to Gin: data is
// written as JSON with 200.
func (s *Server) handle(h func(*gin.Context) (any, error)) gin.HandlerFunc {
	return s.handleStatus(func(c *gin.Context) (int, any, error) {
		data, err := h(c)
		return http.StatusOK, data, err
	})
}

// handleStatus adapts a handler that chooses its success status.
func (s *Server) handleStatus(h func(*gin.Context) (int, any, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		status, data, err := h(c)
		if err != nil {
			s.writeError(c, err)
			return
		}
		c.JSON(status, data)
	}
}

// writeError writes an *apiError with its status; any other error as a
// 500, logged.
func (s *Server) writeError(c *gin.Context, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		ae = &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
	}
	if ae.Status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Bearer realm="mmk"`)
	}
	c.JSON(ae.Status, ae)
}
