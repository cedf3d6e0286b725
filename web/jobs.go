package web

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// Limits on the job API's inputs that the spec's own validation does not
// cover.
const (
	// MaxIdempotencyKey is the longest Idempotency-Key header accepted.
	MaxIdempotencyKey = 128
	// MaxListLimit is the largest limit of a list.
	MaxListLimit = 100000
	// MaxReasonLen is the longest cancel reason accepted.
	MaxReasonLen = 1024
	// defaultReconfigs is how many reconfigurations /reconfigs returns
	// without a limit.
	defaultReconfigs = 100
)

// submitRequest is the body of POST /jobs: a spec, whose memory may
// instead be given as a size with a unit. Its MemoryMiB shadows the
// spec's so that a given one can be told from an absent one.
type submitRequest struct {
	jobs.Spec
	MemoryMiB *int64  `json:"memoryMiB,omitempty"`
	Memory    *string `json:"memory,omitempty"`
}

// spec returns the submitted spec with the memory sizes merged and the
// kind defaulted to offline.
func (r *submitRequest) spec() (jobs.Spec, error) {
	spec := r.Spec
	switch {
	case r.Memory != nil && r.MemoryMiB != nil:
		return spec, badRequest("memory", "give memory (\"8GiB\") or memoryMiB (8192), not both")
	case r.Memory != nil:
		mib, err := jobs.ParseMiB(*r.Memory)
		if err != nil {
			return spec, badRequest("memory", "%v", err)
		}
		spec.MemoryMiB = mib
	case r.MemoryMiB != nil:
		spec.MemoryMiB = *r.MemoryMiB
	}
	if spec.Kind == "" {
		spec.Kind = jobs.Offline
	}
	return spec, nil
}

// submit creates a job: 201 with its Location, or 200 with the job an
// earlier request of the same Idempotency-Key created.
func (s *Server) submit(c *gin.Context) (int, any, error) {
	if _, err := query(c); err != nil {
		return 0, nil, err
	}
	key := c.GetHeader("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		return 0, nil, err
	}
	var req submitRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return 0, nil, err
	}
	spec, err := req.spec()
	if err != nil {
		return 0, nil, err
	}
	// The node validates too; validating here names the field even if
	// the node's error loses its type on the way.
	if err := spec.Validate(); err != nil {
		return 0, nil, nodeError("validate", err)
	}
	job, created, err := s.node.Submit(c.Request.Context(), spec, key)
	if err != nil {
		return 0, nil, nodeError("submit", err)
	}
	c.Header("Location", "/api/v1/jobs/"+job.ID)
	if !created {
		return http.StatusOK, job, nil
	}
	return http.StatusCreated, job, nil
}

// checkIdempotencyKey accepts printable ASCII of at most
// MaxIdempotencyKey bytes.
func checkIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return badRequest("Idempotency-Key", "Idempotency-Key is longer than %d bytes", MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return badRequest("Idempotency-Key", "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// listJobs serves GET /jobs?state=a,b&type=online&name=sub&limit=N.
func (s *Server) listJobs(c *gin.Context) (any, error) {
	q, err := query(c, "state", "type", "name", "limit")
	if err != nil {
		return nil, err
	}
	var f node.JobFilter
	if v := q.Get("state"); v != "" {
		for _, name := range strings.Split(v, ",") {
			st, err := jobs.ParseState(strings.TrimSpace(name))
			if err != nil {
				return nil, badRequest("state", "%v", err)
			}
			f.States = append(f.States, st)
		}
	}
	switch k := jobs.Kind(q.Get("type")); k {
	case "", jobs.Online, jobs.Offline:
		f.Kind = k
	default:
		return nil, badRequest("type", "type must be online or offline, not %q", truncate(string(k), 40))
	}
	f.Name = q.Get("name")
	if len(f.Name) > jobs.MaxNameLen || !utf8.ValidString(f.Name) {
		return nil, badRequest("name", "name must be UTF-8 text of at most %d bytes", jobs.MaxNameLen)
	}
	limit, err := intParam(q, "limit", 1, MaxListLimit, 0)
	if err != nil {
		return nil, err
	}
	f.Limit = int(limit)
	list, err := s.node.Jobs(f)
	if err != nil {
		return nil, nodeError("list jobs", err)
	}
	if list == nil {
		list = []jobs.Job{}
	}
	return list, nil
}

// getJob serves GET /jobs/:id.
func (s *Server) getJob(c *gin.Context) (any, error) {
	id, err := jobID(c)
	if err != nil {
		return nil, err
	}
	if _, err := query(c); err != nil {
		return nil, err
	}
	job, err := s.node.Job(id)
	if err != nil {
		return nil, nodeError("get job", err)
	}
	return job, nil
}

// jobEvents serves GET /jobs/:id/events.
func (s *Server) jobEvents(c *gin.Context) (any, error) {
	id, err := jobID(c)
	if err != nil {
		return nil, err
	}
	if _, err := query(c); err != nil {
		return nil, err
	}
	events, err := s.node.Events(id)
	if err != nil {
		return nil, nodeError("job events", err)
	}
	if events == nil {
		events = []jobs.Event{}
	}
	return events, nil
}

// cancelRequest is the optional body of POST /jobs/:id/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

// cancelJob serves POST /jobs/:id/cancel.
func (s *Server) cancelJob(c *gin.Context) (any, error) {
	id, err := jobID(c)
	if err != nil {
		return nil, err
	}
	if _, err := query(c); err != nil {
		return nil, err
	}
	var req cancelRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return nil, err
	}
	if len(req.Reason) > MaxReasonLen || !jobs.Printable(req.Reason) {
		return nil, badRequest("reason", "reason must be printable text of at most %d bytes", MaxReasonLen)
	}
	if req.Reason == "" {
		req.Reason = "requested through the API"
	}
	job, err := s.node.Cancel(id, req.Reason)
	if err != nil {
		return nil, nodeError("cancel", err)
	}
	return job, nil
}
