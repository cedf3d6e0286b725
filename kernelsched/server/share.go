package server

import (
	"fmt"
	"sync"
)

// maxNameBytes is what all of a server's tasks may make it keep of their
// kernel names together; one job's tasks may keep at most a quarter of
// it, one task maxNameBytesTask.
const maxNameBytes = 64 << 20

// shares keeps one job from taking what the server has for all (issue
// 38, row 3): the task slots and the bytes of kernel names kept. A job
// (Identity.Job; a process where the server identifies none) holds at
// most a quarter of the slots, and takes a slot beyond its first only
// while more than a quarter stay free, so the last quarter is always
// there for other jobs' first tasks. Its tasks keep at most a quarter of
// maxNameBytes of names; names past that are read and not kept (their
// launches are unprofiled), so that the task stays scheduled.
type shares struct {
	mu       sync.Mutex
	maxTasks int // all tasks; jobTasks one job's, and the slots kept free
	jobTasks int
	tasks    int
	names    int
	jobs     map[string]*jobShare
}

// jobShare is what one job holds.
type jobShare struct{ tasks, names int }

func newShares(maxTasks int) *shares {
	return &shares{maxTasks: maxTasks, jobTasks: max(1, maxTasks/4), jobs: map[string]*jobShare{}}
}

// admit takes a task slot for job, or says why there is none for it.
func (sh *shares) admit(job string) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.tasks >= sh.maxTasks {
		return fmt.Errorf("%w (%d)", errTooManyTask, sh.maxTasks)
	}
	j := sh.jobs[job]
	if j == nil {
		j = &jobShare{}
		sh.jobs[job] = j
	}
	switch free := sh.maxTasks - sh.tasks; {
	case j.tasks >= sh.jobTasks:
		return fmt.Errorf("%w: %s holds %d tasks, its share of %d", errJobShare, job, j.tasks, sh.maxTasks)
	case j.tasks > 0 && free <= sh.maxTasks/4:
		return fmt.Errorf("%w: %s holds %d tasks and the last %d of %d slots are kept for other jobs", errJobShare, job, j.tasks, free, sh.maxTasks)
	}
	j.tasks++
	sh.tasks++
	return nil
}

// leave gives back a task's slot and the names it kept.
func (sh *shares) leave(job string, names int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	j := sh.jobs[job]
	if j == nil {
		return
	}
	j.tasks--
	j.names -= names
	sh.tasks--
	sh.names -= names
	if j.tasks <= 0 {
		delete(sh.jobs, job)
	}
}

// takeNames reports whether job's tasks may keep n more bytes of names,
// and counts them if so.
func (sh *shares) takeNames(job string, n int) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	j := sh.jobs[job]
	if j == nil || j.names+n > maxNameBytes/4 || sh.names+n > maxNameBytes {
		return false
	}
	j.names += n
	sh.names += n
	return true
}

// giveNames gives back n bytes of names job's tasks kept.
func (sh *shares) giveNames(job string, n int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if j := sh.jobs[job]; j != nil {
		j.names -= n
		sh.names -= n
	}
}

// nameBytes is the bytes of names all tasks keep.
func (sh *shares) nameBytes() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.names
}
