package web

import (
	"maps"

	"github.com/mmkgpu/mmk/jobs"
)

// hiddenValue stands for an environment value the caller may not see.
const hiddenValue = "(hidden)"

// A job's environment often holds secrets (tokens, passwords): its
// values are shown to the job's owner and to the admins only (caller.owns);
// any other caller sees the keys, each with hiddenValue (issue 38).

// view is job j as the caller may see it.
func (cl caller) view(j jobs.Job) jobs.Job {
	if len(j.Spec.Env) == 0 || cl.owns(j) {
		return j
	}
	env := maps.Clone(j.Spec.Env)
	for k := range env {
		env[k] = hiddenValue
	}
	j.Spec.Env = env
	return j
}

// viewAll is the jobs as the caller may see them; list is not changed.
func (cl caller) viewAll(list []jobs.Job) []jobs.Job {
	if cl.admin {
		return list
	}
	out := make([]jobs.Job, len(list))
	for i, j := range list {
		out[i] = cl.view(j)
	}
	return out
}

// viewer names what the caller may see of every job, for the streams'
// shared encodings: the admins see all, any other user its own jobs'
// values (-1: an admin; else the caller's uid).
func (cl caller) viewer() int {
	if cl.admin {
		return -1
	}
	return cl.owner.UID
}
