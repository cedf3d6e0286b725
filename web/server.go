// Package web is mmkd's HTTP face, built on Gin: the health endpoints, the
// GPU inventory, the job API (submit, list, inspect, cancel, logs), the
// node's placement plan and kernel schedulers, Prometheus metrics and the
// API's OpenAPI document, all under /api/v1 except /healthz, /readyz and
// /metrics; the live stream the dashboard reads (/api/v1/stream); and
// the dashboard itself at / (see ui.go).
//
// Handlers are thin: they read the request, ask the Node or the GPU
// backend, and return data or an error; one function writes either as
// JSON. A client mistake is an *apiError with a 4xx status and, where
// one field is at fault, its name; any other error is a 500, logged.
package web

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is
// not set.
const DefaultMaxBodyBytes = 1 << 20

// defaultLogPoll is how often a followed log is read for new bytes.
const defaultLogPoll = 250 * time.Millisecond

// Options configure a Server.
type Options struct {
	// Backend is the GPU backend /api/v1/gpus and /readyz read.
	Backend partitioner.Backend
	// Node serves the job API; nil answers its routes with 503.
	Node Node
	// Log receives request failures and the access log (debug level);
	// nil discards them.
	Log *slog.Logger
	// Token, when set, is the bearer token every route but /healthz
	// requires of a TCP caller (a caller on the Unix socket is known by
	// its user, see auth.go).
	Token string
	// TokenFile is the file on the node that holds Token, where it came
	// from one ("": the configuration's server.token): the sign-in
	// (GET /api/v1/signin) names it.
	TokenFile string
	// TokenOwner is the user the jobs of a TCP caller run as (nil:
	// mmkd's own user, jobs.Self).
	TokenOwner *jobs.Owner
	// AllowedHosts are the host names a TCP request's Host may name
	// besides IP addresses and localhost (server.allowed_hosts).
	AllowedHosts []string
	// MaxStreams caps the live streams served at once (default
	// DefaultMaxStreams).
	MaxStreams int
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes);
	// a larger one is answered with 413.
	MaxBodyBytes int64
}

// Server serves mmkd's HTTP API.
type Server struct {
	backend      partitioner.Backend
	node         Node
	log          *slog.Logger
	token        string
	tokenFile    string
	tokenOwner   jobs.Owner
	allowedHosts []string
	origins      *http.CrossOriginProtection
	maxBody      int64
	maxStreams   int32
	engine       *gin.Engine
	metrics      http.Handler
	// logPoll is how often a followed log is polled (tests shorten it).
	logPoll time.Duration
	// streamGap, streamSched and streamBeat pace the live stream (tests
	// shorten them); streams counts the streams being served.
	streamGap, streamSched, streamBeat time.Duration
	streams                            atomic.Int32
	// shared is what the streams share, read and encoded once.
	shared streamShared
	// closing is closed by Close: followed logs and streams end.
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a server with the given options.
func New(opts Options) *Server {
	gin.SetMode(gin.ReleaseMode)
	s := &Server{
		backend:    opts.Backend,
		node:       opts.Node,
		log:        opts.Log,
		token:      opts.Token,
		tokenFile:  opts.TokenFile,
		maxBody:    opts.MaxBodyBytes,
		maxStreams: int32(opts.MaxStreams),
		origins:    http.NewCrossOriginProtection(),
		engine:     gin.New(),
		logPoll:    defaultLogPoll,
		closing:    make(chan struct{}),

		streamGap:   defaultStreamGap,
		streamSched: defaultStreamSched,
		streamBeat:  defaultStreamBeat,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.maxStreams <= 0 {
		s.maxStreams = DefaultMaxStreams
	}
	s.tokenOwner = jobs.Self()
	if opts.TokenOwner != nil {
		s.tokenOwner = *opts.TokenOwner
	}
	for _, h := range opts.AllowedHosts {
		s.allowedHosts = append(s.allowedHosts, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	s.metrics = newMetricsHandler(s.node, s.log)
	s.routes()
	return s
}

// routes registers every route. Keep openapi.json in step: a test
// compares the two.
func (s *Server) routes() {
	e := s.engine
	e.HandleMethodNotAllowed = true
	e.Use(s.recovery, s.accessLog, s.crossOrigin, s.limitBody)
	// Liveness answers without a token, so that supervisors can probe it.
	e.GET("/healthz", s.handle(s.healthz))
	// The dashboard's files hold no data: they are served without the
	// token, which the page then asks for (ui.go).
	e.GET("/", s.uiIndex)
	e.GET("/ui/*file", s.uiAsset)
	// Where the token is, for the dashboard's sign-in: never the token.
	e.GET("/api/v1/signin", s.hostOnly, s.handle(s.signIn))

	authed := e.Group("", s.auth)
	authed.GET("/readyz", s.handle(s.readyz))
	authed.GET("/metrics", s.serveMetrics)

	v1 := authed.Group("/api/v1")
	v1.GET("/openapi.json", s.openAPI)
	v1.GET("/gpus", s.handle(s.gpus))

	jobs := v1.Group("", s.needNode)
	jobs.GET("/whoami", s.handle(s.whoAmI))
	jobs.POST("/jobs", s.handleStatus(s.submit))
	jobs.GET("/jobs", s.handle(s.listJobs))
	jobs.GET("/jobs/:id", s.handle(s.getJob))
	jobs.GET("/jobs/:id/events", s.handle(s.jobEvents))
	jobs.POST("/jobs/:id/cancel", s.handle(s.cancelJob))
	jobs.GET("/jobs/:id/logs", s.jobLogs)
	jobs.GET("/jobs/:id/usage", s.handle(s.jobUsage))
	jobs.GET("/jobs/:id/slo", s.handle(s.jobSLO))
	jobs.GET("/slo", s.handle(s.slo))
	jobs.GET("/usage", s.handle(s.usage))
	jobs.GET("/gpus/health", s.handle(s.gpuHealth))
	jobs.GET("/instances", s.handle(s.instances))
	jobs.GET("/plan", s.handle(s.plan))
	jobs.GET("/reconfigs", s.handle(s.reconfigs))
	jobs.GET("/kernelsched", s.handle(s.kernelsched))
	jobs.GET("/stream", s.stream)
	jobs.PUT("/claims/:uid", s.forClaims, s.handleStatus(s.prepareClaim))
	jobs.GET("/claims/:uid", s.forClaims, s.handle(s.getClaim))
	jobs.DELETE("/claims/:uid", s.forClaims, s.handleStatus(s.releaseClaim))

	// Unknown routes and methods ask for the token too, so that an
	// unauthenticated client learns nothing of the API.
	e.NoRoute(s.auth, s.handle(func(c *gin.Context) (any, error) {
		return nil, &apiError{Status: http.StatusNotFound, Message: "no route " + c.Request.Method + " " + c.Request.URL.Path}
	}))
	e.NoMethod(s.auth, s.handle(func(c *gin.Context) (any, error) {
		return nil, &apiError{Status: http.StatusMethodNotAllowed,
			Message: "method " + c.Request.Method + " is not allowed on " + c.Request.URL.Path + " (allowed: " + c.Writer.Header().Get("Allow") + ")"}
	}))
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Close ends the responses that would otherwise last as long as a job
// or a client (followed logs, streams), so that http.Server.Shutdown, called after it, need
// not wait for them. Other requests are served as before.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
}

// recovery turns a handler's panic into a logged 500: a bug, never an
// answer to bad input (the fuzz tests hold handlers to that).
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panicked", "method", c.Request.Method, "path", c.Request.URL.Path, "panic", r)
			if !c.Writer.Written() {
				c.AbortWithStatusJSON(http.StatusInternalServerError, &apiError{Message: "internal error"})
			}
			c.Abort()
		}
	}()
	c.Next()
}

func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.log.Debug("http", "method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "duration", time.Since(start))
}

// limitBody bounds every request body: a declared length over the limit
// is refused at once, a body that grows past it fails its read (see
// decodeJSON).
func (s *Server) limitBody(c *gin.Context) {
	if c.Request.ContentLength > s.maxBody {
		s.writeError(c, tooLarge(s.maxBody))
		c.Abort()
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.maxBody)
	c.Next()
}

// needNode answers 503 on the job routes when the server has no Node.
func (s *Server) needNode(c *gin.Context) {
	if s.node == nil {
		s.writeError(c, &apiError{Status: http.StatusServiceUnavailable, Message: "jobs are not served"})
		c.Abort()
		return
	}
	c.Next()
}

func (s *Server) healthz(*gin.Context) (any, error) {
	return map[string]string{"status": "ok"}, nil
}

// readyz answers 200 when the GPU backend answers and the node (if any)
// is ready.
func (s *Server) readyz(c *gin.Context) (any, error) {
	out := map[string]string{"status": "ready"}
	if s.backend != nil {
		if _, err := s.backend.GPUs(); err != nil {
			return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "GPU backend: " + err.Error()}
		}
		out["backend"] = s.backend.Name()
	}
	if s.node != nil {
		if err := s.node.Ready(c.Request.Context()); err != nil {
			return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "node: " + err.Error()}
		}
	}
	return out, nil
}

func (s *Server) gpus(*gin.Context) (any, error) {
	if s.backend == nil {
		return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "GPUs are not served"}
	}
	return partitioner.ReadInventory(s.backend)
}
