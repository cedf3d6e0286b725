package web

import (
	"context"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// Node is what the job API needs of mmkd's node (node.Node implements it;
// tests use fakes).
type Node interface {
	// Submit validates and stores a job that runs as owner (nil: as
	// mmkd's user). With an idempotency key already used it returns the
	// job created then and false. A bad spec is a *jobs.FieldError, an
	// owner the node may not run jobs as wraps jobs.ErrForbidden.
	Submit(ctx context.Context, spec jobs.Spec, idempotencyKey string, owner *jobs.Owner) (jobs.Job, bool, error)
	// MayRunAs is nil when the node runs jobs as owner, else the
	// refusal (wrapping jobs.ErrForbidden) Submit would answer.
	MayRunAs(owner jobs.Owner) error
	// Jobs lists jobs, newest first.
	Jobs(f node.JobFilter) ([]jobs.Job, error)
	// JobsSince returns at most limit jobs changed after version since,
	// oldest change first, with the job counts; limit 0: none, and the
	// current version (node.JobFeed).
	JobsSince(since uint64, limit int) node.JobFeed
	// Job returns one job; an unknown id wraps jobs.ErrNotFound.
	Job(id string) (jobs.Job, error)
	// Events returns a job's transitions.
	Events(id string) ([]jobs.Event, error)
	// Cancel cancels a job (SIGTERM, then SIGKILL after the grace
	// period, if it runs). A finished job is a *jobs.TransitionError.
	Cancel(id, reason string) (jobs.Job, error)
	// LogPath is the job's log file; the rotated older part is LogPath +
	// ".1".
	LogPath(id string) (string, error)
	// Plan is the current placement.
	Plan() node.PlanView
	// Reconfigs are the last n reconfigurations, newest first.
	Reconfigs(n int) ([]jobs.Reconfig, error)
	// Schedulers are the kernel schedulers of the instances.
	Schedulers() []node.SchedView
	// Ready is nil once the node serves (store open, GPUs read).
	Ready(ctx context.Context) error
	// Changed returns a channel that is closed at the next change of a
	// job, the plan or the kernel schedulers' tasks (each call may return
	// a new channel): live views wait on it.
	Changed() <-chan struct{}
}
