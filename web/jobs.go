package web

import (
	"errors"
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
	// MaxListLimit is the largest limit of a list; DefaultListLimit the
	// limit of a list that gives none. A longer list is read in pages
	// (?before=, the Link header).
	MaxListLimit     = 5000
	DefaultListLimit = 100
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
	// A claim job is the DRA driver's, whichever route submits it.
	if spec.Claim != nil {
		if err := s.mayClaim(callerOf(c)); err != nil {
			return 0, nil, err
		}
	}
	// The node validates too; validating here names the field even if
	// the node's error loses its type on the way.
	if err := spec.Validate(); err != nil {
		return 0, nil, nodeError("validate", err)
	}
	owner := callerOf(c).owner
	// Whether the job's user can enter its working directory is the
	// node's to say too; here the fake node's clients learn it as well.
	if spec.Claim == nil {
		if err := node.CheckWorkDir(spec, owner); err != nil {
			return 0, nil, nodeError("validate", err)
		}
	}
	job, created, err := s.node.Submit(c.Request.Context(), spec, key, &owner)
	if err != nil {
		return 0, nil, nodeError("submit", err)
	}
	c.Header("Location", "/api/v1/jobs/"+job.ID)
	job = callerOf(c).view(job)
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

// listJobs serves GET /jobs?state=a,b&type=online&name=sub&owner=USER&limit=N&before=ID:
// at most N jobs (DefaultListLimit without a limit), newest first, created
// before job ID if given. A full page has a Link header to the next
// (rel="next"), the same query before its last job.
func (s *Server) listJobs(c *gin.Context) (any, error) {
	q, err := query(c, "state", "type", "name", "owner", "limit", "before")
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
	f.Owner = q.Get("owner")
	if len(f.Owner) > 64 || !utf8.ValidString(f.Owner) {
		return nil, badRequest("owner", "owner must be a user name or uid of at most 64 bytes")
	}
	limit, err := intParam(q, "limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	f.Limit = int(limit)
	if f.Before = q.Get("before"); f.Before != "" && !jobs.ValidID(f.Before) {
		return nil, badRequest("before", "before must be a job id, not %q", truncate(f.Before, 40))
	}
	list, err := s.node.Jobs(f)
	if err != nil {
		return nil, nodeError("list jobs", err)
	}
	if list == nil {
		list = []jobs.Job{}
	}
	list = callerOf(c).viewAll(list)
	if len(list) == f.Limit {
		q.Set("before", list[len(list)-1].ID) // the same query, on from the page's last job
		c.Header("Link", "</api/v1/jobs?"+q.Encode()+`>; rel="next"`)
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
	return callerOf(c).view(job), nil
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
	if err := s.mayAct(c, id, "cancel"); err != nil {
		return nil, err
	}
	if len(req.Reason) > MaxReasonLen || !jobs.Printable(req.Reason) {
		return nil, badRequest("reason", "reason must be printable text of at most %d bytes", MaxReasonLen)
	}
	if req.Reason == "" {
		req.Reason = "requested through the API"
	}
	job, err := s.node.Cancel(id, req.Reason)
	if errors.Is(err, node.ErrCancelPending) {
		c.Header("Retry-After", "2") // the node tries again itself
	}
	if err != nil {
		return nil, nodeError("cancel", err)
	}
	return callerOf(c).view(job), nil
}

// mayAct refuses a caller acting on a job that is not its own (auth.go:
// caller.owns): 403, or 404 for an unknown job.
func (s *Server) mayAct(c *gin.Context, id, what string) error {
	cl := callerOf(c)
	if cl.admin {
		return nil
	}
	j, err := s.node.Job(id)
	if err != nil {
		return nodeError(what, err)
	}
	if !cl.owns(j) {
		return forbidden(cl, j, what)
	}
	return nil
}
