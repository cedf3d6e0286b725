// Package web is mmkd's HTTP face, built on Gin: for now the health
// endpoints and the read-only GPU inventory under /api/v1. Handlers return
// data or an *apiError; one function writes both as JSON.
package web

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/partitioner"
)

// Server serves the API over a GPU backend.
type Server struct {
	backend partitioner.Backend
	log     *slog.Logger
	engine  *gin.Engine
}

// apiError is an error with the HTTP status it is answered with.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
}

func (e *apiError) Error() string { return e.Message }

// New returns a server reading GPUs from backend.
func New(backend partitioner.Backend, log *slog.Logger) *Server {
	gin.SetMode(gin.ReleaseMode)
	s := &Server{backend: backend, log: log, engine: gin.New()}
	s.engine.Use(gin.Recovery(), s.accessLog)
	s.engine.GET("/healthz", s.handle(s.healthz))
	s.engine.GET("/readyz", s.handle(s.readyz))
	v1 := s.engine.Group("/api/v1")
	v1.GET("/gpus", s.handle(s.gpus))
	s.engine.NoRoute(s.handle(func(c *gin.Context) (any, error) {
		return nil, &apiError{Status: http.StatusNotFound, Message: "no route " + c.Request.Method + " " + c.Request.URL.Path}
	}))
	return s
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.engine }

// handle adapts a handler that returns data or an error to Gin: data is
// written as JSON with 200; an *apiError with its status; any other error
// as 500, logged.
func (s *Server) handle(h func(*gin.Context) (any, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		data, err := h(c)
		if err == nil {
			c.JSON(http.StatusOK, data)
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			s.log.Error("request failed", "path", c.Request.URL.Path, "err", err)
			ae = &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
		}
		c.JSON(ae.Status, ae)
	}
}

func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.log.Debug("http", "method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "duration", time.Since(start))
}

func (s *Server) healthz(*gin.Context) (any, error) {
	return map[string]string{"status": "ok"}, nil
}

// readyz answers 200 when the GPU backend answers.
func (s *Server) readyz(*gin.Context) (any, error) {
	if _, err := s.backend.GPUs(); err != nil {
		return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "GPU backend: " + err.Error()}
	}
	return map[string]string{"status": "ready", "backend": s.backend.Name()}, nil
}

func (s *Server) gpus(*gin.Context) (any, error) {
	return partitioner.ReadInventory(s.backend)
}
