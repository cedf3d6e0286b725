package web

import (
	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// instanceView is one instance of the plan with the GPU it is cut from.
type instanceView struct {
	GPU     int    `json:"gpu"`
	GPUUUID string `json:"gpuUUID"`
	node.InstanceView
}

// instances serves GET /instances: every instance of the plan, GPU by
// GPU.
func (s *Server) instances(c *gin.Context) (any, error) {
	if _, err := query(c); err != nil {
		return nil, err
	}
	out := []instanceView{}
	for _, g := range s.node.Plan().GPUs {
		for _, in := range g.Instances {
			if in.Jobs == nil {
				in.Jobs = []node.PlacedView{}
			}
			out = append(out, instanceView{GPU: g.Index, GPUUUID: g.UUID, InstanceView: in})
		}
	}
	return out, nil
}

// plan serves GET /plan.
func (s *Server) plan(c *gin.Context) (any, error) {
	if _, err := query(c); err != nil {
		return nil, err
	}
	p := s.node.Plan()
	if p.GPUs == nil {
		p.GPUs = []node.GPUView{}
	}
	if p.Waiting == nil {
		p.Waiting = []string{}
	}
	if p.WaitingJobs == nil {
		p.WaitingJobs = []node.WaitingView{}
	}
	if p.WaitingByClass == nil {
		p.WaitingByClass = map[string]int{}
	}
	return p, nil
}

// reconfigs serves GET /reconfigs?limit=N, newest first.
func (s *Server) reconfigs(c *gin.Context) (any, error) {
	q, err := query(c, "limit")
	if err != nil {
		return nil, err
	}
	limit, err := intParam(q, "limit", 1, MaxListLimit, defaultReconfigs)
	if err != nil {
		return nil, err
	}
	list, err := s.node.Reconfigs(int(limit))
	if err != nil {
		return nil, nodeError("reconfigurations", err)
	}
	if list == nil {
		list = []jobs.Reconfig{}
	}
	return list, nil
}

// kernelsched serves GET /kernelsched: each instance's kernel scheduler
// and its counters.
func (s *Server) kernelsched(c *gin.Context) (any, error) {
	if _, err := query(c); err != nil {
		return nil, err
	}
	list := s.node.Schedulers()
	if list == nil {
		list = []node.SchedView{}
	}
	return list, nil
}
