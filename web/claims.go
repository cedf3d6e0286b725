package web

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
)

// ClaimNode is the part of a Node that serves Kubernetes claims (the DRA
// driver's seam, docs/kubernetes.md). A Node without it answers the claim
// routes with 503. Only the admin reaches them (forClaims, auth.go).
type ClaimNode interface {
	// PrepareClaim submits the claim job of spec.Claim, or returns the
	// live one the claim has (false). A bad spec is a *jobs.FieldError.
	PrepareClaim(ctx context.Context, spec jobs.Spec) (jobs.Job, bool, error)
	// Claim returns the newest job of a claim (jobs.ErrNotFound).
	Claim(uid string) (jobs.Job, error)
	// ReleaseClaim ends the claim's live job; ok is false when it had
	// none.
	ReleaseClaim(uid string) (j jobs.Job, ok bool, err error)
}

// MaxClaimWait is the longest a PUT of a claim waits for its grant.
const MaxClaimWait = 60 * time.Second

// claimRequest is the body of PUT /claims/:uid: a claim job's spec, its
// memory as in a submission.
type claimRequest struct {
	submitRequest
}

// claimNode returns the node's claim API and the :uid path parameter.
func (s *Server) claimNode(c *gin.Context) (ClaimNode, string, error) {
	cn, ok := s.node.(ClaimNode)
	if !ok {
		return nil, "", &apiError{Status: http.StatusServiceUnavailable, Message: "claims are not served"}
	}
	uid := c.Param("uid")
	if !jobs.ValidClaimUID(uid) {
		return nil, "", badRequest("uid", "%q is not a claim UID", truncate(uid, 40))
	}
	return cn, uid, nil
}

// prepareClaim serves PUT /claims/:uid?wait=SECONDS: it submits the claim
// job (201) or finds the live one (200), then waits up to wait seconds
// for it to be granted or to end. A job still waiting for its place is
// answered with 202: ask again.
func (s *Server) prepareClaim(c *gin.Context) (int, any, error) {
	cn, uid, err := s.claimNode(c)
	if err != nil {
		return 0, nil, err
	}
	wait, spec, err := readClaim(c)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case spec.Claim == nil:
		return 0, nil, badRequest("claim", "a claim job names its claim")
	case spec.Claim.UID == "":
		spec.Claim.UID = uid
	case spec.Claim.UID != uid:
		return 0, nil, badRequest("claim.uid", "claim.uid %q is not the UID of the path (%q)", truncate(spec.Claim.UID, 40), uid)
	}
	job, created, err := cn.PrepareClaim(c.Request.Context(), spec)
	if err != nil {
		return 0, nil, nodeError("prepare claim", err)
	}
	c.Header("Location", "/api/v1/claims/"+uid)
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Duration(wait)*time.Second)
	defer cancel()
	for job.State != jobs.Running && !job.State.Terminal() {
		changed := s.node.Changed()
		if job, err = cn.Claim(uid); err != nil {
			return 0, nil, nodeError("claim", err)
		}
		if job.State == jobs.Running || job.State.Terminal() {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return http.StatusAccepted, job, nil
		case <-s.closing:
			return http.StatusAccepted, job, nil
		}
	}
	if created {
		return http.StatusCreated, job, nil
	}
	return http.StatusOK, job, nil
}

// readClaim reads a PUT's wait parameter and claim job spec.
func readClaim(c *gin.Context) (int64, jobs.Spec, error) {
	var req claimRequest
	q, err := query(c, "wait")
	if err != nil {
		return 0, jobs.Spec{}, err
	}
	wait, err := intParam(q, "wait", 0, int64(MaxClaimWait/time.Second), 0)
	if err == nil {
		err = decodeJSON(c, &req, false)
	}
	if err != nil {
		return 0, jobs.Spec{}, err
	}
	spec, err := req.spec()
	return wait, spec, err
}

// getClaim serves GET /claims/:uid: the claim's newest job.
func (s *Server) getClaim(c *gin.Context) (any, error) {
	cn, uid, err := s.claimNode(c)
	if err != nil {
		return nil, err
	}
	if _, err := query(c); err != nil {
		return nil, err
	}
	job, err := cn.Claim(uid)
	if err != nil {
		return nil, nodeError("claim", err)
	}
	return job, nil
}

// releaseClaim serves DELETE /claims/:uid: the claim's live job ends
// (200 with it); a claim with none is released already (204).
func (s *Server) releaseClaim(c *gin.Context) (int, any, error) {
	cn, uid, err := s.claimNode(c)
	if err != nil {
		return 0, nil, err
	}
	if _, err := query(c); err != nil {
		return 0, nil, err
	}
	job, ok, err := cn.ReleaseClaim(uid)
	if err != nil {
		return 0, nil, nodeError("release claim", err)
	}
	if !ok {
		return http.StatusNoContent, nil, nil
	}
	return http.StatusOK, job, nil
}
