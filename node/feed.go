package node

import (
	"container/list"

	"github.com/mmkgpu/mmk/jobs"
)

// JobFeed is what changed among the jobs after a version (Node.JobsSince):
// a live view keeps the version it has seen and asks only for what is
// newer, so that its cost follows the changes, not the number of jobs.
type JobFeed struct {
	// Jobs are the jobs changed after the version asked for, oldest
	// change first.
	Jobs []jobs.Job
	// Version is the version of the last job in Jobs, or the current
	// version when Jobs holds every change: ask again from it.
	Version uint64
	// Current is the version of the newest change: two answers to the
	// same question with the same Current are the same.
	Current uint64
	// More says that more jobs changed than the limit let through.
	More bool
	// Total and Counts count every job, Counts per state (every state is
	// present).
	Total  int
	Counts map[jobs.State]int
}

// Feed numbers the changes of jobs: each Set gives the job the next
// version, and Since walks the jobs changed after a version, oldest change
// first, in time proportional to what changed (a list kept in version
// order; a changed job moves to its end). It also counts the jobs per
// state. It is not safe for concurrent use: its owner locks it.
type Feed struct {
	version uint64
	byVer   list.List // of *feedEntry, oldest version first
	at      map[string]*list.Element
	counts  map[jobs.State]int
}

type feedEntry struct {
	job     *jobs.Job
	version uint64
	state   jobs.State
}

// NewFeed returns an empty feed.
func NewFeed() *Feed {
	return &Feed{at: map[string]*list.Element{}, counts: map[jobs.State]int{}}
}

// reserve sizes an empty feed's index for n jobs (a start adds every
// job of the store, one by one).
func (f *Feed) reserve(n int) {
	if len(f.at) == 0 {
		f.at = make(map[string]*list.Element, n)
	}
}

// Set records that *j was added or changed. The feed keeps the pointer:
// Since copies what it points to then.
func (f *Feed) Set(j *jobs.Job) {
	f.version++
	if e, ok := f.at[j.ID]; ok {
		fe := e.Value.(*feedEntry)
		f.counts[fe.state]--
		fe.job, fe.version, fe.state = j, f.version, j.State
		f.byVer.MoveToBack(e)
	} else {
		f.at[j.ID] = f.byVer.PushBack(&feedEntry{job: j, version: f.version, state: j.State})
	}
	f.counts[j.State]++
}

// Remove forgets a job (removed after its retention).
func (f *Feed) Remove(id string) {
	e, ok := f.at[id]
	if !ok {
		return
	}
	f.counts[e.Value.(*feedEntry).state]--
	f.byVer.Remove(e)
	delete(f.at, id)
}

// Since returns at most limit jobs changed after version since, oldest
// change first, with the counts. With limit 0 it returns no job and the
// current version.
func (f *Feed) Since(since uint64, limit int) JobFeed {
	out := JobFeed{Version: f.version, Current: f.version, Total: len(f.at), Counts: make(map[jobs.State]int, len(jobs.States()))}
	for _, st := range jobs.States() {
		out.Counts[st] = f.counts[st]
	}
	if limit <= 0 {
		return out
	}
	// The first entry newer than since, found from the end: the walk is
	// as long as the changes.
	first := f.byVer.Back()
	if first == nil || first.Value.(*feedEntry).version <= since {
		return out
	}
	for p := first.Prev(); p != nil && p.Value.(*feedEntry).version > since; p = p.Prev() {
		first = p
	}
	for e := first; e != nil; e = e.Next() {
		if len(out.Jobs) == limit {
			out.More = true
			out.Version = e.Prev().Value.(*feedEntry).version
			break
		}
		out.Jobs = append(out.Jobs, *e.Value.(*feedEntry).job)
	}
	return out
}
